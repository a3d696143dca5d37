package cpuprofile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Field numbers of profile.proto that decode reads; the rest it skips.
const (
	profileSampleType  = 1
	profileSample      = 2
	profileLocation    = 4
	profileFunction    = 5
	profileStringTable = 6
	profilePeriod      = 12

	valueTypeType = 1
	valueTypeUnit = 2

	sampleLocationID = 1
	sampleValue      = 2

	locationID   = 1
	locationLine = 4
	lineFunction = 1

	functionID   = 1
	functionName = 2
)

// Protocol buffers' wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

var errTruncated = errors.New("the message ends inside a field")

// decode reads a Profile message: never more than its bytes hold, so a
// damaged profile is an error, not a panic or a huge allocation.
func decode(b []byte) (*profile, error) {
	p := &profile{size: len(b), locations: map[uint64][]uint64{}, functions: map[uint64]int64{}}
	err := fields(b, func(num int, wire int, v uint64, data []byte) error {
		var err error
		switch {
		case num == profileSampleType && wire == wireBytes:
			var vt valueType
			err = fields(data, func(num, wire int, v uint64, _ []byte) error {
				switch {
				case num == valueTypeType && wire == wireVarint:
					vt.typ = int64(v)
				case num == valueTypeUnit && wire == wireVarint:
					vt.unit = int64(v)
				}
				return nil
			})
			p.sampleTypes = append(p.sampleTypes, vt)
		case num == profileSample && wire == wireBytes:
			var s sample
			err = fields(data, func(num, wire int, v uint64, data []byte) error {
				switch num {
				case sampleLocationID:
					return repeated(wire, v, data, func(x uint64) { s.locations = append(s.locations, x) })
				case sampleValue:
					return repeated(wire, v, data, func(x uint64) { s.values = append(s.values, int64(x)) })
				}
				return nil
			})
			p.samples = append(p.samples, s)
		case num == profileLocation && wire == wireBytes:
			var id uint64
			var fns []uint64
			err = fields(data, func(num, wire int, v uint64, data []byte) error {
				switch {
				case num == locationID && wire == wireVarint:
					id = v
				case num == locationLine && wire == wireBytes:
					return fields(data, func(num, wire int, v uint64, _ []byte) error {
						if num == lineFunction && wire == wireVarint {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			p.locations[id] = fns
		case num == profileFunction && wire == wireBytes:
			var id uint64
			var name int64
			err = fields(data, func(num, wire int, v uint64, _ []byte) error {
				switch {
				case num == functionID && wire == wireVarint:
					id = v
				case num == functionName && wire == wireVarint:
					name = int64(v)
				}
				return nil
			})
			p.functions[id] = name
		case num == profileStringTable && wire == wireBytes:
			p.strings = append(p.strings, string(data))
		case num == profilePeriod && wire == wireVarint:
			p.period = int64(v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// fields calls field for each field of the message b: its number, its wire
// type, and its value (a varint's or a fixed width's in v, a
// length-delimited one's bytes in data).
func fields(b []byte, field func(num, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errTruncated
		}
		b = b[n:]
		num, wire := key>>3, int(key&7)
		if num == 0 || num > math.MaxInt32 {
			return fmt.Errorf("a field numbered %d", num)
		}
		var v uint64
		var data []byte
		switch wire {
		case wireVarint:
			if v, n = binary.Uvarint(b); n <= 0 {
				return errTruncated
			}
			b = b[n:]
		case wireFixed64:
			if len(b) < 8 {
				return errTruncated
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case wireFixed32:
			if len(b) < 4 {
				return errTruncated
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case wireBytes:
			size, n := binary.Uvarint(b)
			if n <= 0 || size > uint64(len(b)-n) {
				return errTruncated
			}
			data, b = b[n:n+int(size)], b[n+int(size):]
		default:
			return fmt.Errorf("field %d has wire type %d, which profiles do not use", num, wire)
		}
		if err := field(int(num), wire, v, data); err != nil {
			return err
		}
	}
	return nil
}

// repeated reads a repeated integer field, packed (one length-delimited
// run of varints) or not (one varint).
func repeated(wire int, v uint64, data []byte, add func(uint64)) error {
	switch wire {
	case wireVarint:
		add(v)
	case wireBytes:
		for len(data) > 0 {
			x, n := binary.Uvarint(data)
			if n <= 0 {
				return errTruncated
			}
			add(x)
			data = data[n:]
		}
	}
	return nil
}
