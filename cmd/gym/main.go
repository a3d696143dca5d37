// Command gym is a Go implementation of NeMo Gym's CLI. Invoked as ng it
// is gym; invoked under a legacy ng_* or nemo_gym_* name it runs that
// name's gym command.
package main

import "os"

func main() {
	args, ok := commandLine(os.Args[0], os.Args[1:], os.Stderr)
	if !ok {
		os.Exit(1)
	}
	os.Exit(run(args))
}
