package workload

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// spdxList is the SPDX License List nemo-gym 0.7.0's manifest check knows
// (through packaging 26's bundled copy), so an identifier is accepted here
// exactly when NeMo Gym accepts it.
//
//go:embed spdx.txt
var spdxList string

var (
	spdxOnce                sync.Once
	spdxLicenses, spdxExcep map[string]string // lower-cased id → canonical id
)

func loadSPDX() {
	spdxLicenses, spdxExcep = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(spdxList, "\n") {
		kind, id, ok := strings.Cut(line, " ")
		switch {
		case !ok:
		case kind == "L":
			spdxLicenses[strings.ToLower(id)] = id
		case kind == "E":
			spdxExcep[strings.ToLower(id)] = id
		}
	}
}

// licenseRefID is what may follow LicenseRef-.
var licenseRefID = regexp.MustCompile(`^[A-Za-z0-9.-]+$`)

// maxLicenseDepth is the nesting limit of parentheses (CPython's, which
// packaging borrows).
const maxLicenseDepth = 200

// privateLicenses are the manifest's non-SPDX licensing values.
var privateLicenses = map[string]bool{"internal": true, "proprietary": true, "unknown": true}

// CanonicalLicense checks a manifest's licensing value as NeMo Gym does:
// internal, proprietary, unknown, or an SPDX license expression, which it
// returns in canonical form (identifiers in their SPDX spelling, operators
// upper-case). The error says which token is wrong.
func CanonicalLicense(expr string) (string, error) {
	if privateLicenses[expr] {
		return expr, nil
	}
	invalid := fmt.Errorf("Invalid license expression: %s", pyRepr(expr))
	if expr == "" {
		return "", invalid
	}
	spdxOnce.Do(loadSPDX)
	padded := strings.NewReplacer("(", " ( ", ")", " ) ").Replace(expr)
	raw := strings.Fields(padded)
	tokens := make([]string, len(raw))
	refs := map[string]string{}
	for i, t := range raw {
		tokens[i] = strings.ToLower(t)
		if strings.HasPrefix(tokens[i], "licenseref-") {
			for _, r := range t {
				if r > 127 {
					return "", fmt.Errorf("Invalid licenseref (non-ASCII): %s", pyRepr(t))
				}
			}
			if _, seen := refs[tokens[i]]; !seen {
				refs[tokens[i]] = "LicenseRef-" + t[len("licenseref-"):]
			}
		}
	}
	if !licenseSyntaxOK(tokens) {
		return "", invalid
	}
	isOp := func(t string) bool { return t == "or" || t == "and" || t == "with" || t == "(" || t == ")" }
	var out []string
	afterLicense := false
	for i, t := range tokens {
		if isOp(t) {
			if t == "with" && (!afterLicense || i+1 == len(tokens) || isOp(tokens[i+1])) {
				return "", invalid
			}
			out = append(out, strings.ToUpper(t))
			afterLicense = false
			continue
		}
		if len(out) > 0 && out[len(out)-1] == "WITH" {
			id, ok := spdxExcep[t]
			if !ok {
				return "", fmt.Errorf("Unknown license exception: %s", pyRepr(t))
			}
			out = append(out, id)
			afterLicense = false
			continue
		}
		name, suffix := t, ""
		if strings.HasSuffix(t, "+") {
			name, suffix = t[:len(t)-1], "+"
		}
		if ref, ok := strings.CutPrefix(name, "licenseref-"); ok {
			if suffix != "" || !licenseRefID.MatchString(ref) {
				return "", fmt.Errorf("Invalid licenseref: %s", pyRepr(t))
			}
			out = append(out, refs[name])
		} else {
			id, ok := spdxLicenses[name]
			if !ok {
				return "", fmt.Errorf("Unknown license: %s", pyRepr(name))
			}
			out = append(out, id+suffix)
		}
		afterLicense = true
	}
	return strings.NewReplacer("( ", "(", " )", ")").Replace(strings.Join(out, " ")), nil
}

// licenseSyntaxOK checks the order of names and operators and the
// balance of parentheses.
func licenseSyntaxOK(tokens []string) bool {
	depth, expectOperand := 0, true
	for _, t := range tokens {
		switch t {
		case "(":
			if !expectOperand || depth >= maxLicenseDepth {
				return false
			}
			depth++
		case ")":
			if expectOperand || depth == 0 {
				return false
			}
			depth--
		case "or", "and", "with":
			if expectOperand {
				return false
			}
			expectOperand = true
		default:
			if !expectOperand {
				return false
			}
			expectOperand = false
		}
	}
	return !expectOperand && depth == 0
}

// pyRepr is Python's repr of a string, as NeMo Gym's messages quote values.
func pyRepr(s string) string { return interp.PythonRepr(tree.NewString(s)) }
