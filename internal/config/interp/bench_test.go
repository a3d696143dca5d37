package interp

import "testing"

// Values shaped like the ones in NeMo Gym configs.
var benchInputs = []string{
	"${policy_base_url}",
	"http://${server.host}:${server.port}/v1",
	"${oc.env:OPENAI_API_KEY,${oc.select:policy_api_key,unset}}",
	"${..responses_api_models.policy_model.name}",
	"${inherit_from:resources_servers.math.config}",
	"plain value without interpolation, as most values are",
}

func BenchmarkParse(b *testing.B) {
	for _, in := range benchInputs {
		b.Run(in[:min(len(in), 24)], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHasInterpolation(b *testing.B) {
	for _, in := range []string{benchInputs[1], benchInputs[5]} {
		b.Run(in[:24], func(b *testing.B) {
			for b.Loop() {
				HasInterpolation(in)
			}
		})
	}
}

func BenchmarkEval(b *testing.B) {
	tpl, err := Parse("http://${server.host}:${server.port}/v1")
	if err != nil {
		b.Fatal(err)
	}
	env := newFakeEnv()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}
