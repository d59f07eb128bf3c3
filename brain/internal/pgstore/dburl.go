package pgstore

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrDatabaseURL is wrapped by the errors of a database URL that cannot
// be used.
var ErrDatabaseURL = errors.New("pgstore: database URL")

// parseURL parses a database URL as Open uses it. Its errors never quote
// the URL: the driver's own quote masks the password only where it can
// tell where the password ends, which a password holding an unescaped '@'
// (or a keyword/value string's escaped quote or space) defeats, leaving
// the rest of it in the message, and so in the logs and on the terminal.
func parseURL(databaseURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, urlError(err)
	}
	// The userinfo of a URL ends at its first '@', as for libpq: the rest
	// of a password holding an unescaped '@' is read as the host's name,
	// which every connection error would then quote. No host's name holds
	// an '@', so such a URL is refused before anything quotes it.
	hosts := []string{cfg.ConnConfig.Host}
	for _, fb := range cfg.ConnConfig.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	for _, h := range hosts {
		if strings.Contains(h, "@") {
			return nil, fmt.Errorf("%w: a host name holds '@' (an '@' in a user name or password must be written %%40)", ErrDatabaseURL)
		}
	}
	// A user name or password holding an unescaped '/' ends the URL's
	// host part there: the rest of it is read as the database's name, or
	// (after a '?') as a setting's name, which a connection error or the
	// server's refusal would quote. Neither holds an '@' unless escaped,
	// so such a URL is refused too.
	if pathHoldsAt(databaseURL) || splitUserinfo(databaseURL) {
		return nil, fmt.Errorf("%w: the database name or a setting holds '@' (a '/' in a user name or password must be written %%2F, an '@' in a setting %%40)", ErrDatabaseURL)
	}
	for name := range cfg.ConnConfig.RuntimeParams {
		if strings.Contains(name, "@") {
			return nil, fmt.Errorf("%w: a setting's name holds '@' (a '/' in a user name or password must be written %%2F)", ErrDatabaseURL)
		}
	}
	return cfg, nil
}

// splitUserinfo reports whether a URL has no userinfo, its host part
// ending at a '/' before any '@', yet holds an '@' further on: a user
// name or password with an unescaped '/' whose rest the driver reads as
// the database's name and settings (and a setting's value, such as
// user=, that the connection errors quote), up to the '@' that was
// meant to end it.
func splitUserinfo(databaseURL string) bool {
	for _, scheme := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(databaseURL, scheme); ok {
			i := strings.IndexAny(rest, "@/")
			return i >= 0 && rest[i] == '/' && strings.Contains(rest[i:], "@")
		}
	}
	return false
}

// pathHoldsAt reports whether the database name of a URL (the part
// between the first '/' after the host and the query) holds an
// unescaped '@'.
func pathHoldsAt(databaseURL string) bool {
	for _, scheme := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(databaseURL, scheme); ok {
			_, path, found := strings.Cut(rest, "/")
			path, _, _ = strings.Cut(path, "?")
			return found && strings.Contains(path, "@")
		}
	}
	return false
}

// urlError answers the driver's parse error without the URL it quotes,
// nor any part of it: the driver's message quotes what it could not read
// (a query parameter's name, a keyword of the keyword/value form), which
// a password holding a '/', '?' or an unescaped space makes a piece of
// the password. So every quoted part of the message is left out, but
// for the syntax the message names, and the driver's error is not kept.
func urlError(err error) error {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return fmt.Errorf("%w: cannot parse", ErrDatabaseURL)
	}
	// A copy that quotes an empty URL says the same without it.
	bare := *pce
	bare.ConnString = ""
	why := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
	why = quoted.ReplaceAllStringFunc(why, func(q string) string {
		switch q {
		case `"="`, `":"`, `"/"`, `"]"`, `"sslcert"`, `"sslkey"`:
			return q
		}
		return `"…"`
	})
	return &urlErr{why: why}
}

// quoted matches a double-quoted part of a message, as %q writes it.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// urlErr is a database URL's parse error: why it was refused.
type urlErr struct{ why string }

func (e *urlErr) Error() string { return ErrDatabaseURL.Error() + ": cannot parse: " + e.why }

func (e *urlErr) Is(target error) bool { return target == ErrDatabaseURL }
