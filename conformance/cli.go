package conformance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// RunCLI implements
//
//	brain conformance --url URL [--token TOKEN] --profile FILE [--junit FILE] [--run ID,...] [--serial] [--list]
//
// It runs the suite against the provider at URL, prints a pass/fail/skip
// table (with the full messages of failed cases) to stdout and optionally
// writes JUnit XML. It answers 0 when no case failed, 1 when some did and 2
// for a usage or setup error.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "base URL of the provider (it serves {url}/v1/operations)")
	token := fs.String("token", "", "bearer token of the provider (default: the profile's)")
	profile := fs.String("profile", "", "JSON profile describing the provider's executes and capabilities")
	junit := fs.String("junit", "", "write JUnit XML to this file")
	run := fs.String("run", "", "comma-separated case ids to run (default: all)")
	serial := fs.Bool("serial", false, "run the cases one at a time")
	list := fs.Bool("list", false, "list the case ids and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: brain conformance --url URL [--token TOKEN] --profile FILE [--junit FILE] [--run ID,...] [--serial] [--list]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *list {
		for _, id := range IDs() {
			fmt.Fprintln(stdout, id)
		}
		return 0
	}
	if *url == "" || *profile == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	p, err := LoadProfile(*profile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	tg := p.Target(*url, *token)
	opts := p.RunOptions()
	opts.Serial = opts.Serial || *serial
	if *run != "" {
		known := IDs()
		for _, id := range strings.Split(*run, ",") {
			id = strings.TrimSpace(id)
			if !contains(known, id) {
				fmt.Fprintf(stderr, "conformance: unknown case id %q (see --list)\n", id)
				return 2
			}
			opts.Run = append(opts.Run, id)
		}
	}

	report := Check(ctx, func(T) Target { return tg }, opts)
	printTable(stdout, report)
	if *junit != "" {
		if err := writeJUnitFile(*junit, report); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	if len(report.Failed()) > 0 {
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func printTable(w io.Writer, r Report) {
	fmt.Fprintf(w, "%-4s  %-36s %8s  %s\n", "", "CASE", "TIME", "DETAIL")
	fmt.Fprint(w, Summary(r.Results))
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", len(r.Passed()), len(r.Failed()), len(r.Skipped()))
	for _, res := range r.Results {
		if res.Status == Fail {
			fmt.Fprintf(w, "\n--- FAIL %s\n    %s\n", res.ID, strings.ReplaceAll(strings.Join(res.Log, "\n"), "\n", "\n    "))
		}
	}
}

func writeJUnitFile(path string, r Report) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("conformance: %w", cerr)
		}
	}()
	return WriteJUnit(f, r)
}
