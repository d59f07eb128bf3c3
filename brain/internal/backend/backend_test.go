package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRegisteredSchemeSelectsBackend checks that a database URL reaches
// the backend registered for its scheme, with the options unchanged, and
// that an unregistered scheme is refused without quoting the URL.
func TestRegisteredSchemeSelectsBackend(t *testing.T) {
	var got Options
	want := &Backend{}
	t.Cleanup(func() {
		mu.Lock()
		delete(openers, "memtest")
		mu.Unlock()
	})
	Register("memtest", func(_ context.Context, o Options) (*Backend, error) {
		got = o
		return want, nil
	})
	opts := Options{DataDir: "/d", DatabaseURL: "memtest://u:secret@h/db"}
	b, err := Open(context.Background(), opts)
	if err != nil || b != want || got.DatabaseURL != opts.DatabaseURL || got.DataDir != "/d" {
		t.Fatalf("Open = %v %v, options %+v", b, err, got)
	}
	_, err = Open(context.Background(), Options{DatabaseURL: "other://u:secret@h/db"})
	if !errors.Is(err, ErrUnknownScheme) || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "memtest") {
		t.Errorf("unknown scheme: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of a scheme did not panic")
		}
	}()
	Register("memtest", nil)
}

// TestFileBackendKeepsKeyAcrossOpens opens the file backend twice over one
// directory: the reporter key survives, and a second opener is refused
// while the first holds the lock.
func TestFileBackendKeepsKeyAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(context.Background(), Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.ReporterKey) != 32 {
		t.Fatalf("reporter key of %d bytes", len(b.ReporterKey))
	}
	if b.Modules != nil || b.Tools != nil {
		t.Error("the file backend shares module stores; it keeps modules in the data directory only")
	}
	if _, err := Open(context.Background(), Options{DataDir: dir}); err == nil {
		t.Error("a second opener of a locked data directory was accepted")
	}
	key := string(b.ReporterKey)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(context.Background(), Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if string(b.ReporterKey) != key {
		t.Error("the reporter key changed across opens")
	}
}
