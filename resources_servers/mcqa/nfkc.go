package mcqa

import "strings"

// nfkcLite applies the part of Unicode NFKC normalisation (which NeMo Gym
// runs before reading answer letters) that can change which letter is
// read: full-width ASCII, the odd spaces, circled and mathematical letters
// and digits, super- and subscript digits, and Latin ligatures. The
// standard library has no NFKC and the module takes no new dependency for
// it; canonical composition of accents does not affect option letters.
func nfkcLite(s string) string {
	if isPlainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII
			b.WriteRune(r - 0xFF01 + '!')
		case r == 0x00A0, r >= 0x2000 && r <= 0x200A, r == 0x202F, r == 0x205F, r == 0x3000:
			b.WriteByte(' ')
		case r >= 0x24B6 && r <= 0x24CF: // Ⓐ-Ⓩ
			b.WriteRune(r - 0x24B6 + 'A')
		case r >= 0x24D0 && r <= 0x24E9: // ⓐ-ⓩ
			b.WriteRune(r - 0x24D0 + 'a')
		case r >= 0x1D400 && r <= 0x1D6A3: // mathematical alphanumeric letters, 52 per style
			i := (r - 0x1D400) % 52
			if i < 26 {
				b.WriteRune('A' + i)
			} else {
				b.WriteRune('a' + i - 26)
			}
		case r >= 0x1D7CE && r <= 0x1D7FF: // mathematical digits, 10 per style
			b.WriteRune('0' + (r-0x1D7CE)%10)
		case r == 0x00B9:
			b.WriteByte('1')
		case r == 0x00B2 || r == 0x00B3:
			b.WriteRune('2' + r - 0x00B2)
		case r == 0x2070 || (r >= 0x2074 && r <= 0x2079):
			b.WriteRune('0' + r - 0x2070)
		case r >= 0x2080 && r <= 0x2089:
			b.WriteRune('0' + r - 0x2080)
		case r == 0x2024:
			b.WriteByte('.')
		case r == 0x2025:
			b.WriteString("..")
		case r == 0x2026:
			b.WriteString("...")
		case r >= 0xFB00 && r <= 0xFB06:
			b.WriteString([...]string{"ff", "fi", "fl", "ffi", "ffl", "st", "st"}[r-0xFB00])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
