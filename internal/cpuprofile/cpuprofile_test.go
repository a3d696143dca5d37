package cpuprofile

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
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
	// The runtime's profiles are far within the frame budget.
	p, err := decode(gunzip(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for _, s := range p.samples {
		frames += p.frames(s)
	}
	if frames > p.size {
		t.Errorf("%d frames in %d bytes: more than one a byte", frames, p.size)
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Unknown locations and functions, and a location without lines, are
// "?" frames; the CPU time is the cpu/nanoseconds value, wherever it is.
func TestFramesItCannotName(t *testing.T) {
	strs := []string{"", "cpu", "count", "nanoseconds", "f"}
	var p message
	p = p.bytes(profileSampleType, message(nil).varint(valueTypeType, 1).varint(valueTypeUnit, 2))
	p = p.bytes(profileSampleType, message(nil).varint(valueTypeType, 1).varint(valueTypeUnit, 3))
	// Leaf first: an address-only location, f, a location nobody defined,
	// a function nobody defined.
	p = p.bytes(profileSample, message(nil).bytes(sampleLocationID, packed(2, 1, 9, 3)).bytes(sampleValue, packed(7, 10e6)))
	p = p.bytes(profileLocation, message(nil).varint(locationID, 1).bytes(locationLine, message(nil).varint(lineFunction, 1)))
	p = p.bytes(profileLocation, message(nil).varint(locationID, 2))
	p = p.bytes(profileLocation, message(nil).varint(locationID, 3).bytes(locationLine, message(nil).varint(lineFunction, 5)))
	p = p.bytes(profileFunction, message(nil).varint(functionID, 1).varint(functionName, 4))
	for _, s := range strs {
		p = p.bytes(profileStringTable, []byte(s))
	}
	var tally Tally
	if err := tally.Add(p); err != nil {
		t.Fatal(err)
	}
	if q, f := tally.functions["?"], tally.functions["f"]; q == nil || f == nil || q.self != 10*time.Millisecond || q.total != 10*time.Millisecond || f.self != 0 || f.total != 10*time.Millisecond {
		t.Errorf("? = %+v, f = %+v: want the leaf's 10 ms on ?, once, and f's total 10 ms", q, f)
	}
}

func TestAFailedAddChangesNothing(t *testing.T) {
	var tally Tally
	if err := tally.Add(testProfile()); err != nil {
		t.Fatal(err)
	}
	var before strings.Builder
	tally.WriteTable(&before)
	damaged := message(testProfile()).bytes(profileSample, message(nil).bytes(sampleLocationID, packed(1)).bytes(sampleValue, packed(1)))
	if err := tally.Add(damaged); err == nil {
		t.Fatal("a sample short of values was read")
	}
	var after strings.Builder
	tally.WriteTable(&after)
	if after.String() != before.String() {
		t.Errorf("the failed profile was tallied in part:\n%s\nwas\n%s", after.String(), before.String())
	}
}

// A name longer than the column runs into the columns after it, so that one
// long name does not widen every line.
func TestLongNames(t *testing.T) {
	long := strings.Repeat("x", 300)
	tally := Tally{functions: map[string]*cost{long: {self: time.Second, total: time.Second}, "short": {total: time.Millisecond}}}
	var out strings.Builder
	tally.WriteTable(&out)
	lines := strings.Split(out.String(), "\n")
	if got := len(lines[3]); got != nameWidth+24 {
		t.Errorf("header is %d wide, want %d:\n%s", got, nameWidth+24, lines[3])
	}
	if !strings.HasPrefix(lines[4], long+"    1.000000") || len(lines[5]) != nameWidth+24 {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestDamagedProfiles(t *testing.T) {
	good := testProfile()
	noCPU := message(nil).bytes(profileSampleType, message(nil).varint(valueTypeType, 1)).bytes(profileStringTable, nil).bytes(profileStringTable, []byte("samples"))
	shortSample := message(testProfile()).bytes(profileSample, message(nil).bytes(sampleLocationID, packed(1)).bytes(sampleValue, packed(1)))
	// One location of 100 lines, named 1,000 times by one sample: 100,000
	// frames from about 1,400 bytes.
	var deep message
	for range 100 {
		deep = deep.bytes(locationLine, message(nil).varint(lineFunction, 1))
	}
	wide := message(testProfile()).bytes(profileLocation, message(deep).varint(locationID, 9))
	ids := make([]uint64, 1000)
	for i := range ids {
		ids[i] = 9
	}
	wide = wide.bytes(profileSample, message(nil).bytes(sampleLocationID, packed(ids...)).bytes(sampleValue, packed(1, 1)))
	negative := message(testProfile()).bytes(profileSample, message(nil).bytes(sampleLocationID, packed(1)).bytes(sampleValue, packed(1, 1<<63)))
	cpuCount := message(nil).bytes(profileSampleType, message(nil).varint(valueTypeType, 1).varint(valueTypeUnit, 2)).
		bytes(profileStringTable, nil).bytes(profileStringTable, []byte("cpu")).bytes(profileStringTable, []byte("count"))
	for _, tc := range []struct {
		name    string
		profile []byte
		want    string
	}{
		{"truncated", good[:len(good)-3], "ends inside a field"},
		{"a length past the end", []byte{profileSample<<3 | wireBytes, 0x7f, 1}, "ends inside a field"},
		{"wire type 3", []byte{1<<3 | 3}, "wire type 3"},
		{"field 0", []byte{0, 0}, "a field numbered 0"},
		{"not gzip after all", []byte{0x1f, 0x8b, 0, 0}, "unexpected EOF"},
		{"no cpu values", noCPU, "not a CPU profile"},
		{"cpu counted, not timed", cpuCount, "not a CPU profile"},
		{"a sample short of values", shortSample, "a sample has 1 values, not the 2"},
		{"a negative time", negative, "a negative CPU time"},
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
