//go:build !unix

package server

type peeker struct{}

// open reports whether an idle connection can carry another request; off
// unix only data sent unasked is seen.
func (c *h1Conn) open() bool { return c.br.Buffered() == 0 }
