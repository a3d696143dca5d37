package health

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"unsafe"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/extsort"
	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// record is what the reports still need of a digest once its counts are
// in the summary: the keys it is grouped by, what a task row reads, and
// its verdict line. Records are sorted on disk a chunk at a time, so a
// check holds one task's records, never the run's.
type record struct {
	task, rollout, stage key
	rolloutID            string
	verdict              uint8 // an index into verdictNames
	unobserved           uint32
	policyCallsObserved  bool
	successfulCalls      int
	findings             []byte // the findings list, as the verdict line has it
	ordinal              int    // the record's place in line order
}

var verdictNames = [...]string{"healthy", "unhealthy", "unobserved"}

func verdictIndex(v string) uint8 { return uint8(slices.Index(verdictNames[:], v)) }

// sortChunk is how many records, and how many task rows, a check holds
// before it spills them; a variable only so that tests can make it spill.
var sortChunk = 1 << 16

// sortBudget bounds the records held by their size too: a record's
// findings can carry long texts.
const sortBudget = 32 << 20

func recordSize(r record) int {
	return int(unsafe.Sizeof(r)) + len(r.task.s) + len(r.rollout.s) + len(r.stage.s) + len(r.rolloutID) + cap(r.findings)
}

// tally is a check's summary being built: add folds in each digest in
// line order, finish groups the records by task and writes the verdicts.
type tally struct {
	s         *summary
	ignored   map[string]bool
	dir       string
	records   *extsort.Sorter[record]
	firstSeen *extsort.Sorter[taskRow] // by name, integers before strings
}

func newTally(dir string, ignoredList []string, ignored map[string]bool) *tally {
	s := &summary{ignored: slices.Sorted(slices.Values(ignoredList)), coverage: map[string]*coverage{},
		verdicts: map[string]int{}, issues: map[string]int{}, byStatus: map[string]int{}}
	if s.ignored == nil {
		s.ignored = []string{}
	}
	for _, c := range Registry {
		s.coverage[c.ID] = &coverage{}
	}
	return &tally{s: s, ignored: ignored, dir: dir,
		records: extsort.New(dir, ".health-records-*", sortChunk, func(a, b record) int {
			return cmp.Or(exactOrder(a.task, b.task), exactOrder(a.rollout, b.rollout), exactOrder(a.stage, b.stage))
		}, extsort.Codec[record]{Append: appendRecord, Decode: decodeRecord}).Budget(sortBudget, recordSize),
		firstSeen: extsort.New(dir, ".health-tasks-*", sortChunk, func(a, b taskRow) int {
			return cmp.Or(strings.Compare(a.name, b.name), compareBool(a.isStr, b.isStr))
		}, taskRowCodec),
	}
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func (t *tally) close() {
	t.records.Close()
	t.firstSeen.Close()
}

// add counts what a digest says on its own, and keeps the rest for
// finish.
func (t *tally) add(d *Digest) error {
	s := t.s
	ordinal := s.records
	s.records++
	for i, c := range Registry {
		if c.Scope != "rollout" {
			continue
		}
		switch {
		case t.ignored[c.ID]:
			s.coverage[c.ID].ignored++
		case d.unobserved&(1<<i) != 0:
			s.coverage[c.ID].unobserved++
		default:
			s.coverage[c.ID].evaluated++
		}
	}
	for _, f := range d.Findings {
		s.issues[f.Check]++
	}
	for k, n := range d.errorsByStatus {
		s.byStatus[k] += n
	}
	if d.captureObserved {
		s.captures++
	}
	s.errTotal += d.callErrors
	if d.callErrors > 0 {
		s.affected++
	}
	if d.endedOnError {
		s.endedOnErr++
	}
	s.replayed += d.duplicatedCalls
	if d.duplicatedCalls > 0 {
		s.dupRollout++
	}
	s.tokens[0] += d.transcriptPrompt
	s.tokens[1] += d.transcriptComplete
	s.tokens[2] += d.capturePrompt
	s.tokens[3] += d.captureCompletion

	w := &jw{}
	w.Open('[')
	for _, fd := range d.Findings {
		w.Element()
		m := []kv{{"check", fd.Check}}
		if fd.Locator != nil {
			m = append(m, kv{"locator", fd.Locator})
		}
		m = append(m, kv{"detail", orEmpty(fd.Detail)})
		w.value(m)
	}
	w.Close(']')
	return t.records.Add(record{task: d.Task, rollout: d.Rollout, stage: d.Stage, rolloutID: d.RolloutID,
		verdict: verdictIndex(d.Verdict), unobserved: d.unobserved, policyCallsObserved: d.policyCallsObserved,
		successfulCalls: d.successfulCalls, findings: w.B, ordinal: ordinal})
}

// finish reads the records back a rollout at a time: records claiming the
// same (task, rollout, stage) are marked duplicates, each record gets its
// line of verdictsPath, and each task its row. The summary is complete
// after it.
func (t *tally) finish(verdictsPath string) error {
	err := jsonl.WriteFileAtomic(verdictsPath, func(out *bufio.Writer) error {
		var copies []record
		var task taskRepeats
		var line []byte
		endRollout := func() error {
			task.add(t.repeat(copies))
			for i := range copies {
				line = appendVerdictLine(line[:0], &copies[i])
				if _, err := out.Write(line); err != nil {
					return err
				}
			}
			clear(copies)
			copies = copies[:0]
			return nil
		}
		err := t.records.Each(func(r record) error {
			if len(copies) > 0 && (copies[0].task != r.task || copies[0].rollout != r.rollout) {
				if err := endRollout(); err != nil {
					return err
				}
			}
			if task.repeats > 0 && task.key != r.task {
				if err := t.firstSeen.Add(t.row(&task)); err != nil {
					return err
				}
			}
			if task.repeats == 0 && len(copies) == 0 {
				task = taskRepeats{key: r.task, policyCalls: true}
			}
			copies = append(copies, r)
			return nil
		})
		if err != nil || len(copies) == 0 {
			return err
		}
		if err := endRollout(); err != nil {
			return err
		}
		return t.firstSeen.Add(t.row(&task))
	})
	if err != nil {
		return err
	}
	t.records.Close()
	return t.orderRows()
}

// taskRepeats is what a task row reads of its repeats (its rollout
// indexes), counted as they come.
type taskRepeats struct {
	key                             key
	repeats, healthy, unhealthy, un int
	policyCalls, succeeded          bool // every repeat's policy calls observed; any call succeeded
}

func (tr *taskRepeats) add(r repeat) {
	tr.repeats++
	switch r.verdict {
	case "healthy":
		tr.healthy++
	case "unhealthy":
		tr.unhealthy++
	default:
		tr.un++
	}
	tr.policyCalls = tr.policyCalls && r.policyCalls
	tr.succeeded = tr.succeeded || r.successfulMax > 0
}

// repeat is one rollout's copies, sorted by stage, as one repeat of its
// task: the copies agree on their verdict or are unobserved together.
// Copies of one stage are duplicates. The copies are left in the verdicts
// file's order.
func (t *tally) repeat(copies []record) repeat {
	s := t.s
	if !t.ignored["rollout_duplicate_identity"] {
		runs(copies, func(a, b record) bool { return a.stage == b.stage }, func(same []record) {
			if len(same) < 2 {
				return
			}
			for i := range same {
				same[i].findings = appendDuplicate(same[i].findings, len(same))
				same[i].verdict = verdictIndex("unhealthy")
				s.issues["rollout_duplicate_identity"]++
			}
		})
	}
	rep := repeat{verdict: verdictNames[copies[0].verdict], policyCalls: true}
	for _, c := range copies {
		if verdictNames[c.verdict] != rep.verdict {
			rep.verdict = "unobserved"
		}
		rep.policyCalls = rep.policyCalls && c.policyCallsObserved
		rep.successfulMax = max(rep.successfulMax, c.successfulCalls)
		s.verdicts[verdictNames[c.verdict]]++
	}
	// The verdicts file sorts the stage None and the string "None" as
	// equals, in line order.
	slices.SortFunc(copies, func(a, b record) int { return cmp.Or(keyOrder(a.stage, b.stage), cmp.Compare(a.ordinal, b.ordinal)) })
	return rep
}

// row is a task's row, with its task-scope checks.
func (t *tally) row(tr *taskRepeats) taskRow {
	s := t.s
	row := taskRow{name: tr.key.String(), isStr: tr.key.isStr, repeats: tr.repeats,
		healthy: tr.healthy, unhealthy: tr.unhealthy, un: tr.un, flags: []string{}}
	cov := s.coverage["task_consistently_unhealthy"]
	switch computable := tr.healthy + tr.unhealthy; {
	case t.ignored["task_consistently_unhealthy"]:
		cov.ignored++
	case computable >= 2:
		cov.evaluated++
		if tr.unhealthy == computable {
			row.flags = append(row.flags, "task_consistently_unhealthy")
		}
	default:
		cov.unobserved++
	}
	cov = s.coverage["task_no_successful_model_calls"]
	switch {
	case t.ignored["task_no_successful_model_calls"]:
		cov.ignored++
	case tr.repeats > 0 && tr.policyCalls:
		cov.evaluated++
		if !tr.succeeded {
			row.flags = append(row.flags, "task_no_successful_model_calls")
		}
	default:
		cov.unobserved++
	}
	for _, f := range row.flags {
		s.issues[f]++
	}
	*tr = taskRepeats{}
	return row
}

// orderRows puts the task rows in NeMo Gym's order: integer tasks first,
// then strings, each by its text. The integer task 1 and the string "1"
// share a name: the string's counts win, in the integer's place. Read by
// name, such a pair is adjacent.
func (t *tally) orderRows() error {
	s := t.s
	s.tasks = extsort.New(t.dir, ".health-tasks-*", sortChunk, func(a, b taskRow) int {
		return cmp.Or(compareBool(a.isStr, b.isStr), strings.Compare(a.name, b.name))
	}, taskRowCodec)
	var prev taskRow
	held := false
	err := t.firstSeen.Each(func(r taskRow) error {
		if held && prev.name == r.name {
			r.isStr = false // in the integer's place
			held = false
			return s.tasks.Add(r)
		}
		if held {
			if err := s.tasks.Add(prev); err != nil {
				return err
			}
		}
		prev, held = r, true
		return nil
	})
	if err == nil && held {
		err = s.tasks.Add(prev)
	}
	t.firstSeen.Close()
	if err != nil {
		return err
	}
	return s.tasks.Finish()
}

// runs calls f with each run of sorted whose neighbours same says are
// equal.
func runs[T any](sorted []T, same func(a, b T) bool, f func([]T)) {
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && same(sorted[start], sorted[end]) {
			end++
		}
		f(sorted[start:end])
		start = end
	}
}

// appendDuplicate adds rollout_duplicate_identity to a findings list.
func appendDuplicate(findings []byte, copies int) []byte {
	w := &jw{}
	w.Open('{')
	w.Key("check")
	w.value("rollout_duplicate_identity")
	w.Key("detail")
	w.value([]kv{{"duplicate_count", copies}})
	w.Close('}')
	out := append([]byte(nil), findings[:len(findings)-1]...) // without its ']'
	if len(findings) > 2 {
		out = append(out, ',')
	}
	out = append(out, w.B...)
	return append(out, ']')
}

func appendVerdictLine(b []byte, r *record) []byte {
	w := &jw{}
	w.B = b
	w.Open('{')
	w.Key("_ng_task_index")
	w.B = r.task.appendJSON(w.B)
	w.Key("_ng_rollout_index")
	w.B = r.rollout.appendJSON(w.B)
	w.Key("rollout_id")
	w.value(r.rolloutID)
	w.Key("verdict")
	w.value(verdictNames[r.verdict])
	w.Key("findings")
	w.B = append(w.B, r.findings...)
	w.Key("unobserved")
	w.B = appendUnobserved(w.B, r.unobserved)
	if !r.stage.none {
		w.Key("stage_index")
		w.B = r.stage.appendJSON(w.B)
	}
	w.Close('}')
	return append(w.B, '\n')
}

// quotedCheckIDs are the checks' IDs in Registry order, each encoded once
// as a verdict line writes it: the line of every rollout without a
// trajectory lists most of them.
var quotedCheckIDs = func() [][]byte {
	q := make([][]byte, len(Registry))
	for i, c := range Registry {
		q[i] = tree.AppendOrjsonString(nil, c.ID)
	}
	return q
}()

// appendUnobserved appends the list of the checks bits marks unobserved,
// in Registry order.
func appendUnobserved(b []byte, bits uint32) []byte {
	b = append(b, '[')
	first := true
	for i, q := range quotedCheckIDs {
		if bits&(1<<i) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		b, first = append(b, q...), false
	}
	return append(b, ']')
}

// The spilled forms. A key is its kind (0 an integer, 1 a string, 2
// none) and its value.
func appendKey(b []byte, k key) []byte {
	switch {
	case k.none:
		return append(b, 2)
	case k.isStr:
		return appendString(append(b, 1), k.s)
	}
	return binary.AppendVarint(append(b, 0), k.n)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decoder reads a spilled value; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

var errSpill = errors.New("health: a spilled record is cut short")

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = errSpill, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.err = errSpill
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) string() string {
	n := d.uvarint()
	if uint64(len(d.b)) < n {
		d.err, d.b = errSpill, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) key() key {
	switch d.byte() {
	case 0:
		v, n := binary.Varint(d.b)
		if n <= 0 {
			d.err, d.b = errSpill, nil
			return key{}
		}
		d.b = d.b[n:]
		return key{n: v}
	case 1:
		return key{isStr: true, s: d.string()}
	}
	return key{none: true}
}

func appendRecord(b []byte, r record) []byte {
	b = appendKey(appendKey(appendKey(b, r.task), r.rollout), r.stage)
	b = appendString(b, r.rolloutID)
	policy := byte(0)
	if r.policyCallsObserved {
		policy = 1
	}
	b = append(b, r.verdict, policy)
	b = binary.AppendUvarint(b, uint64(r.unobserved))
	b = binary.AppendUvarint(b, uint64(r.successfulCalls))
	b = binary.AppendUvarint(b, uint64(r.ordinal))
	return append(b, r.findings...)
}

func decodeRecord(b []byte) (record, error) {
	d := &decoder{b: b}
	r := record{task: d.key(), rollout: d.key(), stage: d.key(), rolloutID: d.string()}
	r.verdict = d.byte()
	r.policyCallsObserved = d.byte() == 1
	r.unobserved = uint32(d.uvarint())
	r.successfulCalls = int(d.uvarint())
	r.ordinal = int(d.uvarint())
	r.findings = append([]byte(nil), d.b...)
	if d.err == nil && (int(r.verdict) >= len(verdictNames) || len(r.findings) < 2) {
		d.err = errSpill
	}
	return r, d.err
}

var taskRowCodec = extsort.Codec[taskRow]{
	Append: func(b []byte, r taskRow) []byte {
		b = appendString(b, r.name)
		isStr := byte(0)
		if r.isStr {
			isStr = 1
		}
		b = append(b, isStr)
		for _, n := range []int{r.repeats, r.healthy, r.unhealthy, r.un, len(r.flags)} {
			b = binary.AppendUvarint(b, uint64(n))
		}
		for _, f := range r.flags {
			b = appendString(b, f)
		}
		return b
	},
	Decode: func(b []byte) (taskRow, error) {
		d := &decoder{b: b}
		r := taskRow{name: d.string(), isStr: d.byte() == 1}
		r.repeats, r.healthy, r.unhealthy, r.un = int(d.uvarint()), int(d.uvarint()), int(d.uvarint()), int(d.uvarint())
		n := d.uvarint()
		r.flags = []string{}
		for i := uint64(0); i < n && d.err == nil; i++ {
			r.flags = append(r.flags, d.string())
		}
		return r, d.err
	},
}
