//go:build race

package config

// raceEnabled: the race detector slows code several times over and makes
// sync.Pool drop what it caches (regexp's matchers among them), so neither
// time nor memory budgets apply under it.
const raceEnabled = true
