package resources

import "github.com/nemo-gym-go/gym/internal/server"

// Config is the config reader every Go server shares.
type Config = server.Section
