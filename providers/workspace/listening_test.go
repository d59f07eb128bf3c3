package workspace

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envtest"
)

// startCommand runs Command with args until ctx ends and answers the URL
// its "listening" line names, the channel its exit status comes on and
// its stderr. It fails the test when Command ends before it listens.
func startCommand(t *testing.T, ctx context.Context, args ...string) (url string, exit <-chan int, stderr *envtest.Buffer) {
	t.Helper()
	outR, outW := io.Pipe()
	stderr = &envtest.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- Command(ctx, args, outW, stderr)
		outW.Close()
	}()
	url = listeningURL(t, outR, stderr.String)
	return url, code, stderr
}

// listenURL finds the URL in a provider's "listening" line.
var listenURL = regexp.MustCompile(`http://\S+`)

// listeningURL reads the first line a provider writes to out, its
// "listening" line, and answers the URL it names; the rest of out is
// read and dropped, so that the provider never blocks writing it. stderr,
// when not nil, tells what the provider said when it does not listen.
func listeningURL(t *testing.T, out io.Reader, stderr func() string) string {
	t.Helper()
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	url := listenURL.FindString(line)
	if err != nil || url == "" {
		said := ""
		if stderr != nil {
			said = stderr()
		}
		t.Fatalf("no listening line: %q, %v (stderr: %s)", line, err, said)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return url
}
