package cpuprofile

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// message builds protocol buffer bytes for the tests.
type message []byte

func (m message) varint(num int, v uint64) message {
	m = binary.AppendUvarint(m, uint64(num)<<3|wireVarint)
	return binary.AppendUvarint(m, v)
}

func (m message) bytes(num int, b []byte) message {
	m = binary.AppendUvarint(m, uint64(num)<<3|wireBytes)
	m = binary.AppendUvarint(m, uint64(len(b)))
	return append(m, b...)
}

func packed(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// testProfile is a CPU profile of three samples:
//
//	10 ms in leaf, called by main.
//	20 ms in helper, inlined into leaf's location (so its stack is
//	helper, leaf, main) — recorded with values unpacked.
//	5 ms in main, which recursed into itself.
func testProfile() []byte {
	strs := []string{"", "samples", "count", "cpu", "nanoseconds", "main", "leaf", "helper"}
	var p message
	p = p.bytes(profileSampleType, message(nil).varint(valueTypeType, 1).varint(valueTypeUnit, 2))
	p = p.bytes(profileSampleType, message(nil).varint(valueTypeType, 3).varint(valueTypeUnit, 4))
	p = p.bytes(profileSample, message(nil).bytes(sampleLocationID, packed(2, 1)).bytes(sampleValue, packed(1, 10e6)))
	p = p.bytes(profileSample, message(nil).varint(sampleLocationID, 3).varint(sampleLocationID, 1).varint(sampleValue, 2).varint(sampleValue, 20e6))
	p = p.bytes(profileSample, message(nil).bytes(sampleLocationID, packed(1, 1)).bytes(sampleValue, packed(1, 5e6)))
	line := func(fn uint64) []byte { return message(nil).varint(lineFunction, fn) }
	p = p.bytes(profileLocation, message(nil).varint(locationID, 1).bytes(locationLine, line(1)))
	p = p.bytes(profileLocation, message(nil).varint(locationID, 2).bytes(locationLine, line(2)))
	p = p.bytes(profileLocation, message(nil).varint(locationID, 3).bytes(locationLine, line(3)).bytes(locationLine, line(2)))
	for id, name := range []uint64{5, 6, 7} {
		p = p.bytes(profileFunction, message(nil).varint(functionID, uint64(id+1)).varint(functionName, name))
	}
	for _, s := range strs {
		p = p.bytes(profileStringTable, []byte(s))
	}
	p = p.varint(profilePeriod, 10e6)
	return p
}

func TestTableOfAProfile(t *testing.T) {
	var tally Tally
	if err := tally.Add(testProfile()); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tally.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	want := `Clock type: CPU, sampled every 10ms (0.04s in all)
Ordered by: totaltime, desc

name          tsub        ttot
main      0.005000    0.035000
leaf      0.010000    0.030000
helper    0.020000    0.020000
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTallyAddsUp(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(testProfile())
	zw.Close()
	var tally Tally
	for _, p := range [][]byte{testProfile(), zipped.Bytes()} {
		if err := tally.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := tally.functions["main"]; got.self != 10*time.Millisecond || got.total != 70*time.Millisecond {
		t.Errorf("main over two profiles = %+v", *got)
	}
	if tally.sampled != 70*time.Millisecond {
		t.Errorf("sampled = %v", tally.sampled)
	}
}

func spin(d time.Duration) int {
	n := 0
	for start := time.Now(); time.Since(start) < d; n++ {
	}
	return n
}

// The table of a profile the runtime wrote names the function that took
// the time.
func TestTableOfARuntimeProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("the test binary is being profiled itself: %v", err)
	}
	spin(300 * time.Millisecond)
	pprof.StopCPUProfile()
	var tally Tally
	if err := tally.Add(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tally.WriteTable(&out)
	if !strings.Contains(out.String(), "\ngithub.com/nemo-gym-go/gym/internal/cpuprofile.spin ") {
		t.Errorf("spin is not in the table:\n%s", out.String())
	}
	if c := tally.functions["github.com/nemo-gym-go/gym/internal/cpuprofile.spin"]; c == nil || c.total <= 0 {
		t.Errorf("spin's time = %+v", c)
	}
}

func TestDamagedProfiles(t *testing.T) {
	good := testProfile()
	noCPU := message(nil).bytes(profileSampleType, message(nil).varint(valueTypeType, 1)).bytes(profileStringTable, nil).bytes(profileStringTable, []byte("samples"))
	shortSample := message(testProfile()).bytes(profileSample, message(nil).bytes(sampleLocationID, packed(1)).bytes(sampleValue, packed(1)))
	// One location of 300 lines, named 2,000 times by each of 50 samples.
	var deep message
	for range 300 {
		deep = deep.bytes(locationLine, message(nil).varint(lineFunction, 1))
	}
	wide := message(testProfile()).bytes(profileLocation, message(deep).varint(locationID, 9))
	ids := make([]uint64, 2000)
	for i := range ids {
		ids[i] = 9
	}
	for range 50 {
		wide = wide.bytes(profileSample, message(nil).bytes(sampleLocationID, packed(ids...)).bytes(sampleValue, packed(1, 1)))
	}
	for _, tc := range []struct {
		name    string
		profile []byte
		want    string
	}{
		{"truncated", good[:len(good)-3], "ends inside a field"},
		{"a length past the end", []byte{profileSample<<3 | wireBytes, 0x7f, 1}, "ends inside a field"},
		{"wire type 3", []byte{1<<3 | 3}, "wire type 3"},
		{"field 0", []byte{0, 0}, "a field numbered 0"},
		{"not gzip after all", []byte{0x1f, 0x8b, 0, 0}, "reading the profile"},
		{"no cpu values", noCPU, "not a CPU profile"},
		{"a sample short of values", shortSample, "a sample has 1 values, not the 2"},
		{"stacks out of proportion", wide, "more frames than a profile of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tally Tally
			err := tally.Add(tc.profile)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func FuzzAdd(f *testing.F) {
	f.Add(testProfile())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var tally Tally
		if tally.Add(b) == nil {
			tally.WriteTable(&strings.Builder{})
		}
	})
}
