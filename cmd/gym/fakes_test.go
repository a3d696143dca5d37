package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nemo-gym-go/gym/internal/datastore/gitlabtest"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// The writable fakes of the dataset scripts, one of each per script.
var (
	fakeHubs    = &scriptFakes[*hubtest.Server]{m: map[*testscript.TestScript]*hubtest.Server{}}
	fakeGitLabs = &scriptFakes[*gitlabtest.Server]{m: map[*testscript.TestScript]*gitlabtest.Server{}}
)

// scriptFakes holds the fake server each script started.
type scriptFakes[S interface{ Close() }] struct {
	mu sync.Mutex
	m  map[*testscript.TestScript]S
}

// get is the script's server; a command other than start needs one.
func (f *scriptFakes[S]) get(ts *testscript.TestScript, name, command string) S {
	f.mu.Lock()
	s, ok := f.m[ts]
	f.mu.Unlock()
	if command != "start" && !ok {
		ts.Fatalf("%s %s before %s start", name, command, name)
	}
	return s
}

// start makes s the script's server, closed when the script ends.
func (f *scriptFakes[S]) start(ts *testscript.TestScript, s S) {
	f.mu.Lock()
	f.m[ts] = s
	f.mu.Unlock()
	ts.Defer(func() {
		s.Close()
		f.mu.Lock()
		delete(f.m, ts)
		f.mu.Unlock()
	})
}

// faultCmd runs the fault commands both fakes take: cut, stall, refuse.
func faultCmd(ts *testscript.TestScript, f *hubtest.Faults, args []string) {
	switch args[0] {
	case "cut":
		f.CutNext(args[1], atoi(ts, args[2]))
	case "stall":
		f.StallNext(args[1], atoi(ts, args[2]))
	case "refuse":
		f.Refuse(atoi(ts, args[1]), atoi(ts, args[2]))
	}
}

// startFlags reads [-token T] [-read-token R] [-lfs N] in any order.
func startFlags(ts *testscript.TestScript, args []string) (token, readToken string, lfs int64) {
	for len(args) >= 2 {
		switch args[0] {
		case "-token":
			token = args[1]
		case "-read-token":
			readToken = args[1]
		case "-lfs":
			n, err := strconv.ParseInt(args[1], 10, 64)
			ts.Check(err)
			lfs = n
		default:
			ts.Fatalf("unknown option %s", args[0])
		}
		args = args[2:]
	}
	if len(args) != 0 {
		ts.Fatalf("odd options %q", args)
	}
	return
}

func atoi(ts *testscript.TestScript, s string) int {
	n, err := strconv.Atoi(s)
	ts.Check(err)
	return n
}

// hubCmd drives a local, writable Hugging Face Hub (internal/hub/hubtest):
//
//	hub start [-token T] [-read-token R] [-lfs BYTES]   HF_ENDPOINT points at it
//	hub collection SLUG                                 an empty collection
//	hub put REPO PATH FILE                              a file on main (in LFS from -lfs BYTES)
//	hub get REPO REVISION PATH OUT                      what the Hub holds, into OUT
//	hub lfs REPO REVISION PATH                          the file is stored in LFS
//	hub cut PATH N                                      the next download of PATH stops after N bytes
//	hub stall PATH N                                    the next download of PATH sends N bytes, then waits
//	hub ranges PATH N                                   PATH was asked for by range N times
//	hub refuse N STATUS                                 the next N requests get STATUS
//	hub commits OUT                                     one line per commit: revision, summary, files
func hubCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: hub start|collection|put|get|lfs|cut|refuse|commits ...")
	}
	s := fakeHubs.get(ts, "hub", args[0])
	switch args[0] {
	case "start":
		token, read, lfs := startFlags(ts, args[1:])
		s = hubtest.New()
		s.Token, s.ReadToken, s.LFSThreshold = token, read, lfs
		fakeHubs.start(ts, s)
		ts.Setenv("HF_ENDPOINT", s.Hub.URL)
	case "collection":
		s.AddCollection(args[1])
	case "put":
		b := []byte(ts.ReadFile(args[3]))
		if s.LFSThreshold > 0 && int64(len(b)) >= s.LFSThreshold {
			s.AddLFSFile(args[1], "main", args[2], b)
		} else {
			s.AddFile(args[1], "main", args[2], b)
		}
	case "get":
		b, ok := s.File(args[1], args[2], args[3])
		if ok == neg {
			ts.Fatalf("the Hub has %s@%s:%s: %v", args[1], args[2], args[3], ok)
		}
		if ok {
			ts.Check(os.WriteFile(ts.MkAbs(args[4]), b, 0o644))
		}
	case "lfs":
		if s.IsLFS(args[1], args[2], args[3]) == neg {
			ts.Fatalf("%s@%s:%s in LFS: %v", args[1], args[2], args[3], !neg)
		}
	case "ranges":
		if n := s.RangeRequests(args[1]); strconv.Itoa(n) != args[2] {
			ts.Fatalf("%d range requests for %s, want %s", n, args[1], args[2])
		}
	case "commits":
		var b strings.Builder
		for _, c := range s.Commits {
			b.WriteString(c.Revision + " | " + c.Summary + " | " + strings.Join(c.Files, ",") + "\n")
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o644))
	case "cut", "stall", "refuse":
		faultCmd(ts, &s.Faults, args)
	default:
		ts.Fatalf("unknown hub command %s", args[0])
	}
}

// gitlabCmd drives a local GitLab model registry (internal/datastore/gitlabtest):
//
//	gitlab start [-token T] [-read-token R]   MLFLOW_TRACKING_URI points at it
//	gitlab put NAME VERSION FILE LOCAL         a dataset version's file
//	gitlab get NAME VERSION FILE OUT           what the registry holds, into OUT
//	gitlab model NAME                          the registry has the dataset
//	gitlab cut FILE N                          the next download of FILE stops after N bytes
//	gitlab stall FILE N                        the next download of FILE sends N bytes, then waits
//	gitlab refuse N STATUS                     the next N requests get STATUS
//	gitlab log OUT                             the requests served, one a line
func gitlabCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: gitlab start|put|get|model|cut|refuse|log ...")
	}
	s := fakeGitLabs.get(ts, "gitlab", args[0])
	switch args[0] {
	case "start":
		token, read, _ := startFlags(ts, args[1:])
		s = gitlabtest.New()
		s.Token, s.ReadToken = token, read
		fakeGitLabs.start(ts, s)
		ts.Setenv("MLFLOW_TRACKING_URI", s.TrackingURI())
	case "put":
		s.AddVersion(args[1], args[2], args[3], []byte(ts.ReadFile(args[4])))
	case "get":
		b, ok := s.File(args[1], args[2], args[3])
		if ok == neg {
			ts.Fatalf("the registry has %s %s %s: %v", args[1], args[2], args[3], ok)
		}
		if ok {
			ts.Check(os.WriteFile(ts.MkAbs(args[4]), b, 0o644))
		}
	case "model":
		if s.HasModel(args[1]) == neg {
			ts.Fatalf("the registry has %s: %v", args[1], !neg)
		}
	case "log":
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(s.Requests(), "\n")+"\n"), 0o644))
	case "cut", "stall", "refuse":
		faultCmd(ts, &s.Faults, args)
	default:
		ts.Fatalf("unknown gitlab command %s", args[0])
	}
}

// waitSize waits (up to 10 s) until a file the glob matches holds at
// least N bytes.
func waitSize(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitsize GLOB N")
	}
	n := int64(atoi(ts, args[1]))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		matches, _ := filepath.Glob(ts.MkAbs(args[0]))
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.Size() >= n {
				return
			}
		}
	}
	ts.Fatalf("%s never held %d bytes", args[0], n)
}
