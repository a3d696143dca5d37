package pyrand

import (
	"math/big"
	"slices"
	"testing"
)

// The expectations are Python 3's: random.Random(seed), its first four
// getrandbits(32), and a fresh generator's shuffle of list(range(10)).
// The first four seeds are int(md5(s).hexdigest(), 16), as NeMo Gym's
// GPQA prepare.py seeds its option shuffle.
func TestAsPython(t *testing.T) {
	for _, tc := range []struct {
		seed    string
		bits    []uint32
		shuffle []int
	}{
		{"d41d8cd98f00b204e9800998ecf8427e", []uint32{3437639768, 3375592593, 622412351, 3642182413}, []int{5, 8, 7, 3, 0, 9, 1, 4, 6, 2}},
		{"936dbc8755f623c951d96ea2b03e13bc", []uint32{278294466, 4195264333, 1892514426, 3334234215}, []int{5, 2, 6, 3, 9, 0, 8, 4, 7, 1}},
		{"b42ace8f1b7366d9d4c7a098288c112e", []uint32{946856809, 333367975, 866631773, 4035274987}, []int{7, 4, 5, 8, 0, 6, 2, 9, 1, 3}},
		{"8a4876ea55d998a5d91ed59db796af28", []uint32{4095936372, 457033236, 1005889734, 3558918244}, []int{6, 5, 8, 2, 4, 7, 0, 9, 3, 1}},
		{"0", []uint32{3626764237, 1654615998, 3255389356, 3823568514}, []int{7, 8, 1, 5, 3, 4, 2, 0, 9, 6}},
		{"1", []uint32{577090037, 2444712010, 3639700191, 3445702192}, []int{6, 8, 9, 7, 5, 3, 0, 4, 1, 2}},
		{"100000000", []uint32{485306839, 1508871100, 1794561286, 4014597330}, []int{8, 9, 3, 2, 4, 7, 0, 6, 5, 1}},
		{"-5", []uint32{2675342405, 1097127993, 3185950873, 1539898300}, []int{2, 3, 1, 0, 8, 7, 6, 5, 4, 9}},
		{"10000000000000000000000007", []uint32{1786885132, 353954449, 1403444918, 2297707818}, []int{0, 8, 7, 3, 2, 9, 4, 5, 1, 6}},
	} {
		t.Run(tc.seed, func(t *testing.T) {
			seed, ok := new(big.Int).SetString(tc.seed, 16)
			if !ok {
				t.Fatal("bad seed")
			}
			r := New(seed)
			var bits []uint32
			for range 4 {
				bits = append(bits, r.Uint32())
			}
			if !slices.Equal(bits, tc.bits) {
				t.Errorf("bits = %v; Python drew %v", bits, tc.bits)
			}
			got := shuffled(New(seed), 10)
			if !slices.Equal(got, tc.shuffle) {
				t.Errorf("shuffle = %v; Python's %v", got, tc.shuffle)
			}
		})
	}
}

// TestLongShuffleAsPython crosses the generator's 624-word refill.
func TestLongShuffleAsPython(t *testing.T) {
	got := shuffled(New(big.NewInt(12345)), 1000)
	sum := 0
	for i, v := range got {
		sum += i * v
	}
	if sum != 244455654 || !slices.Equal(got[:5], []int{669, 944, 291, 633, 922}) {
		t.Errorf("shuffle of 1000: weighted sum %d, head %v; Python's 244455654, [669 944 291 633 922]", sum, got[:5])
	}
}

func shuffled(r *Random, size int) []int {
	l := make([]int, size)
	for i := range l {
		l[i] = i
	}
	r.Shuffle(size, func(i, j int) { l[i], l[j] = l[j], l[i] })
	return l
}
