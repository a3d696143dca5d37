package openai

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// setModelByParse is SetModel as it was before SetModelChecked: validate,
// parse a copy, look the model up on the root, splice or append. The
// rewrite must give the same bytes and the same errors.
func setModelByParse(body []byte, model string) ([]byte, error) {
	root, err := parseObject(body, "request body")
	if err != nil {
		return nil, err
	}
	q := quote(model)
	if m := root.Get("model"); m.Exists() {
		if e, ok := replaceValue(m, q); ok {
			return splice(body, []edit{e}), nil
		}
	}
	end := root.Index + len(strings.TrimRight(root.Raw, " \t\r\n")) - 1
	var b []byte
	b = append(b, body[:end]...)
	if hasMembers(root) {
		b = append(b, ',')
	}
	b = append(b, `"model":`+q...)
	return append(b, body[end:]...), nil
}

var setModelCases = []string{
	`{"model":"client","input":"hi"}`, `{"input":"hi", "model" : null , "z":{"model":"keep"}}`, `{"input":"hi"}`,
	` {}`, "{}\n", " \t{ }\r\n", `{"model":1}`, `{"model":{"a":[1,2]},"model":"second"}`, `{"mo\u0064el":"escaped"}`,
	`{"x":"model","y":{"model":1}}`, `{"input":[{"model":"inner"}],"stream":true}`, "{\"input\":\"hi\"}\n", "{\"model\":\"x\"} \n",
	`[1]`, `{`, ``, `"s"`, `null`, `{"a":}`, `{"a":1}x`, " ", "{\"a\":\"\xff\"}",
}

func TestSetModelMatchesParse(t *testing.T) {
	for _, in := range setModelCases {
		for _, model := range []string{"m", `a"b<c>`, "", "é\u2028"} {
			checkSetModel(t, []byte(in), model)
		}
	}
}

func FuzzSetModel(f *testing.F) {
	for _, in := range setModelCases {
		f.Add([]byte(in), "served-model")
	}
	f.Fuzz(checkSetModel)
}

func checkSetModel(t *testing.T, in []byte, model string) {
	want, wantErr := setModelByParse(in, model)
	got, err := SetModel(in, model)
	if !bytes.Equal(got, want) || errText(err) != errText(wantErr) {
		t.Fatalf("SetModel(%q, %q) = %q, %v; the parsing way gives %q, %v", in, model, got, err, want, wantErr)
	}
	if wantErr == nil {
		if checked := SetModelChecked(in, model); !bytes.Equal(checked, want) {
			t.Fatalf("SetModelChecked(%q, %q) = %q; want %q", in, model, checked, want)
		}
		if !gjson.ValidBytes(got) {
			t.Fatalf("SetModel(%q, %q) = %q, not valid JSON", in, model, got)
		}
	} else if ie := (*InvalidError)(nil); !errors.As(err, &ie) {
		t.Fatalf("SetModel(%q) failed with %T, want *InvalidError", in, err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// BenchmarkSetModel compares, on a 20 KiB agent request, the old way
// (validate, parse a copy), SetModel and SetModelChecked, which the model
// servers use on a body they have validated on arrival.
func BenchmarkSetModel(b *testing.B) {
	req := benchRequest(20 << 10)
	for _, way := range []struct {
		name string
		fn   func([]byte, string) ([]byte, error)
	}{
		{"by-parse", setModelByParse},
		{"validating", SetModel},
		{"checked", func(body []byte, model string) ([]byte, error) { return SetModelChecked(body, model), nil }},
	} {
		b.Run(way.name, func(b *testing.B) {
			b.SetBytes(int64(len(req)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := way.fn(req, "Qwen/Qwen3-235B-A22B"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
