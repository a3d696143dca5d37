// Package pyrand is CPython's random.Random seeded with an int: the same
// Mersenne Twister, seeded the same way, drawing the same bits, so a
// Python script's seeded shuffle can be reproduced exactly.
package pyrand

import "math/big"

const (
	n         = 624
	m         = 397
	matrixA   = 0x9908b0df
	upperMask = 0x80000000
	lowerMask = 0x7fffffff
)

// Random is random.Random(seed) for an int seed.
type Random struct {
	mt  [n]uint32
	mti int
}

// New is random.Random(seed): the key is |seed| in 32-bit words, least
// significant first ([0] for zero), as CPython's random_seed builds it.
func New(seed *big.Int) *Random {
	abs := new(big.Int).Abs(seed)
	var key []uint32
	mask := big.NewInt(0xffffffff)
	for abs.Sign() > 0 {
		key = append(key, uint32(new(big.Int).And(abs, mask).Uint64()))
		abs.Rsh(abs, 32)
	}
	if len(key) == 0 {
		key = []uint32{0}
	}
	r := &Random{}
	r.initByArray(key)
	return r
}

func (r *Random) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < n; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = n
}

func (r *Random) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(n, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

// Uint32 is the generator's next 32-bit output (genrand_uint32).
func (r *Random) Uint32() uint32 {
	if r.mti >= n {
		for kk := 0; kk < n; kk++ {
			y := r.mt[kk]&upperMask | r.mt[(kk+1)%n]&lowerMask
			v := r.mt[(kk+m)%n] ^ y>>1
			if y&1 != 0 {
				v ^= matrixA
			}
			r.mt[kk] = v
		}
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// getrandbits is random.getrandbits(k) for 0 < k <= 32.
func (r *Random) getrandbits(k int) uint32 {
	return r.Uint32() >> (32 - k)
}

// randbelow is Random._randbelow_with_getrandbits(bound) for 0 < bound < 2^32.
func (r *Random) randbelow(bound int) int {
	k := 0
	for v := bound; v > 0; v >>= 1 {
		k++
	}
	for {
		if v := int(r.getrandbits(k)); v < bound {
			return v
		}
	}
}

// Shuffle is random.shuffle on a sequence of length size, swapping
// through swap as Python swaps list items.
func (r *Random) Shuffle(size int, swap func(i, j int)) {
	for i := size - 1; i > 0; i-- {
		swap(i, r.randbelow(i+1))
	}
}
