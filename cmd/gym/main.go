// Command gym is a Go implementation of NeMo Gym's CLI.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:]))
}
