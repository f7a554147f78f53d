package k6

import (
	"fmt"
	"time"
)

// parseTime reads RFC 3339 with optional fraction and a Z or ±hh:mm offset,
// k6's Go time.Time JSON encoding, without allocating.
func parseTime(b []byte) (ns int64, offset int, err error) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't') || b[13] != ':' || b[16] != ':' {
		return parseTimeSlow(b)
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for j := i; j < i+n; j++ {
			c := b[j]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	h, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return parseTimeSlow(b)
	}
	i := 19
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		scale := int64(100000000)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-start < 9 {
				frac += int64(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start {
			return parseTimeSlow(b)
		}
	}
	if i >= len(b) {
		return 0, 0, fmt.Errorf("want an RFC 3339 time, got %q", b)
	}
	switch b[i] {
	case 'Z', 'z':
		if i+1 != len(b) {
			return parseTimeSlow(b)
		}
	case '+', '-':
		if len(b)-i != 6 || b[i+3] != ':' {
			return parseTimeSlow(b)
		}
		oh, ok1 := num(i+1, 2)
		om, ok2 := num(i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return parseTimeSlow(b)
		}
		offset = oh*3600 + om*60
		if b[i] == '-' {
			offset = -offset
		}
	default:
		return parseTimeSlow(b)
	}
	if d > daysIn(mo, y) {
		return 0, 0, fmt.Errorf("day out of range in %q", b)
	}
	days := daysFromCivil(y, mo, d)
	secs := days*86400 + int64(h*3600+mi*60+sec) - int64(offset)
	return secs*1e9 + frac, offset, nil
}

func parseTimeSlow(b []byte) (int64, int, error) {
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, 0, fmt.Errorf("want an RFC 3339 time, got %q", truncate(string(b), 40))
	}
	_, off := t.Zone()
	return t.UnixNano(), off, nil
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is Howard Hinnant's algorithm: days since 1970-01-01.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
