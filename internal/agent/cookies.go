package agent

import (
	"net/http"
	"strings"

	"github.com/nemo-gym-go/gym/internal/server"
)

// RelayCookies is the cookie set to send on the next hop, given the set
// sent so far and the Set-Cookie lines of the latest response (spec §5.4):
// the response's cookies replace the set, name=value only, with nothing merged
// and no domain or path rules. Gym servers re-send their session cookie on
// every response, so the latest response always names the live session.
//
// A response that set no cookie leaves the set as it was. NeMo Gym's spec
// replaces it with nothing there, which loses the resources session after
// a tool that failed (an error response carries no Set-Cookie, and
// server.Client does not surface the headers of one) or after a server that
// does not re-send its cookie; NeMo Gym itself has since moved to keeping
// the session in both cases.
func RelayCookies(current []*http.Cookie, set server.SetCookies) []*http.Cookie {
	if cookies := set.Cookies(); len(cookies) > 0 {
		return cookies
	}
	return current
}

// SetCookies adds a Set-Cookie header for each cookie, as Starlette's
// response.set_cookie(name, value) writes it, so a relayed session reaches
// whoever called this agent. Values go out verbatim: each belongs to the
// server that issued it.
func SetCookies(h http.Header, cookies []*http.Cookie) {
	for _, c := range cookies {
		var b strings.Builder
		b.Grow(len(c.Name) + len(c.Value) + 24)
		b.WriteString(c.Name)
		b.WriteByte('=')
		if c.Quoted {
			b.WriteByte('"')
			b.WriteString(c.Value)
			b.WriteByte('"')
		} else {
			b.WriteString(c.Value)
		}
		b.WriteString("; Path=/; SameSite=lax")
		h.Add("Set-Cookie", b.String())
	}
}
