//go:build !race

package server

// raceBuild is whether the race detector is built in.
const raceBuild = false
