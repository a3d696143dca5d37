package workload

import (
	"strings"
	"testing"
)

// The expectations are packaging.licenses.canonicalize_license_expression's
// (packaging 26, as nemo-gym 0.7.0 installs it) on the same input.
func TestCanonicalLicense(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{in: "unknown", want: "unknown"},
		{in: "internal", want: "internal"},
		{in: "proprietary", want: "proprietary"},
		{in: "mit", want: "MIT"},
		{in: "Apache-2.0", want: "Apache-2.0"},
		{in: "mit and (apache-2.0 or bsd-2-clause)", want: "MIT AND (Apache-2.0 OR BSD-2-Clause)"},
		{in: "GPL-2.0-only WITH classpath-exception-2.0", want: "GPL-2.0-only WITH Classpath-exception-2.0"},
		{in: "gpl-2.0+", want: "GPL-2.0+"},
		{in: "LicenseRef-mine OR licenseref-MINE", want: "LicenseRef-mine OR LicenseRef-mine"},
		{in: "cc-by-4.0", want: "CC-BY-4.0"},
		{in: "", err: "Invalid license expression: ''"},
		{in: "(mit", err: "Invalid license expression: '(mit'"},
		{in: "mit)", err: "Invalid license expression: 'mit)'"},
		{in: "mit and", err: "Invalid license expression: 'mit and'"},
		{in: "mit mit", err: "Invalid license expression: 'mit mit'"},
		{in: "with mit", err: "Invalid license expression"},
		{in: "(mit) with x", err: "Invalid license expression"},
		{in: "Use-it-after-midnight", err: "Unknown license: 'use-it-after-midnight'"},
		{in: "MIT WITH nope", err: "Unknown license exception: 'nope'"},
		{in: "LicenseRef-a_b", err: "Invalid licenseref: 'licenseref-a_b'"},
		{in: "LicenseRef-ü", err: "Invalid licenseref (non-ASCII)"},
		{in: "Apache 2.0", err: "Invalid license expression: 'Apache 2.0'"},
		{in: strings.Repeat("(", 201) + "mit" + strings.Repeat(")", 201), err: "Invalid license expression"},
	}
	for _, tc := range cases {
		got, err := CanonicalLicense(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzCanonicalLicense(f *testing.F) {
	for _, s := range []string{"mit", "MIT AND (Apache-2.0 OR BSD-2-Clause)", "GPL-2.0+ WITH Classpath-exception-2.0", "((", "LicenseRef-x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		canon, err := CanonicalLicense(s)
		if err != nil {
			return
		}
		// A canonical expression is its own canonical form.
		again, err := CanonicalLicense(canon)
		if err != nil || again != canon {
			t.Fatalf("%q → %q → %q, %v", s, canon, again, err)
		}
	})
}
