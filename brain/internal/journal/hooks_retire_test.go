package journal

import (
	"errors"
	"testing"
)

// OnReplay hands over every record appended after the last sync point,
// before the open's sync point retires their log files; BeforeRetire runs
// before every retirement and, failing, keeps the log files.
func TestReplayAndRetireHooks(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a", "b"}, 5, nil)
	replayed := map[string][]uint64{}
	var retires int
	var logsAtRetire int
	opts := *noSyncPoints
	opts.OnReplay = func(session string, recs []Record) error {
		for _, r := range recs {
			replayed[session] = append(replayed[session], r.Sequence)
		}
		return nil
	}
	opts.BeforeRetire = func() error {
		retires++
		logsAtRetire = len(logFiles(t, dir))
		return nil
	}
	fs := openT(t, dir, &opts)
	for _, id := range []string{"a", "b"} {
		if got := replayed[id]; len(got) != 5 || got[0] != 1 || got[4] != 5 {
			t.Errorf("replayed %s = %v, want 1..5", id, got)
		}
	}
	if retires != 1 || logsAtRetire == 0 {
		t.Fatalf("BeforeRetire ran %d times with %d log files; want once, before the logs went", retires, logsAtRetire)
	}
	if logs := logFiles(t, dir); len(logs) != 0 {
		t.Fatalf("log files %v left after the open's sync point", logs)
	}

	// A failing BeforeRetire keeps the log files (and fails the sync
	// point); once it succeeds they are retired.
	refuse := errors.New("not durable elsewhere")
	fail := true
	opts.BeforeRetire = func() error {
		if fail {
			return refuse
		}
		return nil
	}
	fs.opts.BeforeRetire = opts.BeforeRetire
	if err := fs.Append(bg, "a", 6, numbered(6, 1)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Delete(bg, "b"); !errors.Is(err, refuse) {
		t.Fatalf("Delete with a refusing BeforeRetire = %v, want it refused", err)
	}
	if logs := logFiles(t, dir); len(logs) == 0 {
		t.Fatal("the log files were retired though BeforeRetire failed")
	}
	readAll(t, fs, "b", 5)
	fail = false
	if err := fs.Delete(bg, "b"); err != nil {
		t.Fatal(err)
	}
	if logs := logFiles(t, dir); len(logs) != 0 {
		t.Fatalf("log files %v left after a sync point", logs)
	}
}
