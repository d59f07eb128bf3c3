package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// decimalValue is the flag of an integer setting. It reads decimal digits
// only, as its variable does: the flag package's own integer flags take
// 0x10 as 16 and a zero-padded 010 as octal 8, so the same text would
// have set another value through the flag than through the variable (a
// zero-padded byte bound silently shrank).
type decimalValue struct {
	p           *int64
	least, most int64
}

func (v *decimalValue) String() string {
	if v == nil || v.p == nil {
		return "0"
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v *decimalValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New(inRange(v.least, v.most) + ", in decimal digits")
	}
	*v.p = n
	return nil
}

// usageType names the kind of value a flag takes in the usage: the flag
// package calls every flag of a type of its own a "value".
func usageType(fl *flag.Flag) string {
	switch fl.Value.(type) {
	case *decimalValue:
		return "int"
	case secretValue, *secretsValue:
		return "string"
	}
	return ""
}

// printDefaults writes what fs.PrintDefaults writes, each flag shown with
// the kind of value it takes.
func printDefaults(fs *flag.FlagSet) {
	out := fs.Output()
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	text := b.String()
	fs.VisitAll(func(fl *flag.Flag) {
		if kind := usageType(fl); kind != "" {
			text = strings.Replace(text, "  -"+fl.Name+" value\n", "  -"+fl.Name+" "+kind+"\n", 1)
		}
	})
	fmt.Fprint(out, text)
}

// hidden stands for the part of a value the usage does not show.
const hidden = "xxxxx"

// shownURL answers the URL s as the usage shows it: its user information
// and query, which may carry a credential, replaced by hidden. Text that
// is not a URL but may hold one is hidden whole.
func shownURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.ContainsAny(s, "@?") {
			return hidden
		}
		return s
	}
	if u.User != nil {
		u.User = url.User(hidden)
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery = hidden
	}
	if u.Fragment != "" {
		u.Fragment = hidden
	}
	return u.String()
}
