package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// TestDatabaseURLErrorsNeverQuoteThePassword: a database URL that cannot
// be used is refused by CheckURL (and Open) without any part of its
// password in the error, even a password holding an unescaped '@' (whose
// rest a URL parser reads as the host's name) or '/' (whose rest it reads
// as the database's name, or after a '?' as a setting's name or value)
// or, in keyword/value form, a quote or a space. A '?' or '#' in a
// password is the password's, as for libpq.
func TestDatabaseURLErrorsNeverQuoteThePassword(t *testing.T) {
	const secret = "Sekrit-7b1"
	for _, u := range []string{
		"postgres://brain:p@" + secret + "@127.0.0.1:99999/brain",
		"postgres://brain:p@" + secret + "@127.0.0.1:1/brain",
		"postgresql://brain:p@" + secret + "@127.0.0.1/brain?connect_timeout=soon",
		// A '/' in the user name or password ends the URL's host part:
		// the rest would be read as the database's name.
		"postgres://brain:1/" + secret + "@127.0.0.1:1/brain",
		"postgres://br/ain:" + secret + "@127.0.0.1:1/brain",
		"postgres://brain:1/x?" + secret + "@127.0.0.1:1/brain",
		// ... even when the rest reads as a database's name and settings
		// whose values hold the '@' (a user name the errors quote).
		"postgres://127.0.0.1:1/" + secret + "?sslmode=disable&x=@127.0.0.1:1/brain",
		"postgres://127.0.0.1:1/x?sslmode=disable&user=" + secret + "@127.0.0.1:1/brain",
		"host=127.0.0.1 password='p\\' " + secret + "' port=99999",
		"host=127.0.0.1 password=p\\ " + secret + " port=99999",
		"host=127.0.0.1 password = " + secret + " port=99999",
		"host=127.0.0.1 password=p " + secret + " port=99999",
		"postgres://127.0.0.1:1/brain?password=p&" + secret + "&sslmode=disable",
	} {
		err := pgstore.CheckURL(u)
		if err == nil || strings.Contains(err.Error(), secret) || !errors.Is(err, pgstore.ErrDatabaseURL) {
			t.Errorf("CheckURL(%q) = %v; want ErrDatabaseURL, without the password", u, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = pgstore.Open(ctx, pgstore.Options{URL: u, SealingKey: testKey, OpTimeout: time.Second})
		cancel()
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Open(%q) = %v; want an error without the password", u, err)
		}
	}
	// A password written %40 is no host's name, and parses.
	if err := pgstore.CheckURL("postgres://brain:p%40" + secret + "@127.0.0.1:5432/brain"); err != nil {
		t.Errorf("CheckURL of a password with an escaped '@' = %v", err)
	}
	// So do a password written %2F and a database whose name holds an
	// escaped '@'.
	if err := pgstore.CheckURL("postgres://brain:1%2F" + secret + "@127.0.0.1:5432/br%40in"); err != nil {
		t.Errorf("CheckURL of a password with an escaped '/' = %v", err)
	}
	// A setting's '@' after a user name and password, or written %40
	// in a URL without them, parses.
	for _, u := range []string{
		"postgres://brain:p?#" + secret + "@127.0.0.1:5432/brain?application_name=a@b",
		"postgres://127.0.0.1:5432/brain?user=brain%40host",
	} {
		if err := pgstore.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
}
