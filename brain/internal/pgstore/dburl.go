package pgstore

import (
	"errors"
	"fmt"
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
	return cfg, nil
}

// urlError answers the driver's parse error without the URL it quotes.
func urlError(err error) error {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return fmt.Errorf("%w: cannot parse", ErrDatabaseURL)
	}
	// A copy that quotes an empty URL says the same without it.
	bare := *pce
	bare.ConnString = ""
	why := strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
	return &urlErr{why: why, err: pce.Unwrap()}
}

// urlErr is a database URL's parse error: why it was refused, and the
// driver's underlying error, if any, which quotes no URL.
type urlErr struct {
	why string
	err error
}

func (e *urlErr) Error() string { return ErrDatabaseURL.Error() + ": cannot parse: " + e.why }

func (e *urlErr) Is(target error) bool { return target == ErrDatabaseURL }

func (e *urlErr) Unwrap() error { return e.err }
