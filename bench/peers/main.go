package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// peer runs turns of one workload for one client.
type peer interface {
	name() string
	// client answers a function running one turn of w for client c.
	client(ctx context.Context, w string, c int) (func(ctx context.Context) error, error)
}

func main() {
	peers := flag.String("peers", "brain,restate,temporal", "peers to run, comma-separated")
	rounds := flag.Int("rounds", 3, "alternated rounds")
	n1 := flag.Int("n", 200, "turns measured at one client per round")
	dur := flag.Duration("duration", 3*time.Second, "measuring time at 64 clients per round")
	dataDir := flag.String("data", "", "Brain's data directory (default: a temporary one)")
	restateIngress := flag.String("restate-ingress", "http://127.0.0.1:8080", "Restate ingress URL")
	restateAdmin := flag.String("restate-admin", "http://127.0.0.1:9070", "Restate admin URL")
	temporalAddr := flag.String("temporal", "127.0.0.1:7233", "Temporal frontend address")
	flag.Parse()

	ctx := context.Background()
	echo, err := startEcho()
	if err != nil {
		fatal(err)
	}
	var ps []peer
	for _, p := range strings.Split(*peers, ",") {
		var pr peer
		switch p {
		case "brain":
			dir := *dataDir
			if dir == "" {
				if dir, err = os.MkdirTemp("", "peers-brain-"); err != nil {
					fatal(err)
				}
				defer os.RemoveAll(dir)
			}
			pr, err = newBrain(ctx, dir)
		case "restate":
			pr, err = newRestate(ctx, *restateIngress, *restateAdmin, echo)
		case "temporal":
			pr, err = newTemporal(ctx, *temporalAddr, echo)
		default:
			err = fmt.Errorf("unknown peer %q", p)
		}
		if err != nil {
			fatal(fmt.Errorf("%s: %w", p, err))
		}
		ps = append(ps, pr)
	}
	fmt.Printf("peers: %s; rounds %d; %d turns at 1 client, %v at 64 clients\n", *peers, *rounds, *n1, *dur)
	type key struct{ peer, w, what string }
	res := map[key][]float64{}
	for r := 1; r <= *rounds; r++ {
		for _, w := range []string{"W1", "W2"} {
			// Alternate the order of the peers from round to round.
			order := append([]peer(nil), ps...)
			if r%2 == 0 {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			for _, p := range order {
				p50, err := oneClient(ctx, p, w, *n1)
				if err != nil {
					fatal(fmt.Errorf("%s %s: %w", p.name(), w, err))
				}
				tps, err := manyClients(ctx, p, w, 64, *dur)
				if err != nil {
					fatal(fmt.Errorf("%s %s: %w", p.name(), w, err))
				}
				fmt.Printf("round %d %s %-8s p50 1 client %7.2f ms   turns/s 64 clients %7.1f\n", r, w, p.name(), p50, tps)
				res[key{p.name(), w, "p50"}] = append(res[key{p.name(), w, "p50"}], p50)
				res[key{p.name(), w, "tps"}] = append(res[key{p.name(), w, "tps"}], tps)
			}
		}
	}
	fmt.Println("\nmedians over rounds:")
	for _, w := range []string{"W1", "W2"} {
		for _, p := range ps {
			fmt.Printf("%s %-8s p50 %7.2f ms  turns/s %7.1f\n", w, p.name(), median(res[key{p.name(), w, "p50"}]), median(res[key{p.name(), w, "tps"}]))
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// oneClient answers the p50 latency in ms of n turns of one client (after
// 10 unmeasured ones).
func oneClient(ctx context.Context, p peer, w string, n int) (float64, error) {
	turn, err := p.client(ctx, w, 0)
	if err != nil {
		return 0, err
	}
	var lat []float64
	for i := 0; i < n+10; i++ {
		t0 := time.Now()
		if err := turn(ctx); err != nil {
			return 0, err
		}
		if i >= 10 {
			lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
		}
	}
	return median(lat), nil
}

// manyClients answers the turns/s of c clients running turns back to back
// for d.
func manyClients(ctx context.Context, p peer, w string, c int, d time.Duration) (float64, error) {
	turns := make([]func(context.Context) error, c)
	for i := range turns {
		t, err := p.client(ctx, w, i+1)
		if err != nil {
			return 0, err
		}
		turns[i] = t
	}
	var done atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for _, t := range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := t(ctx); err != nil {
					once.Do(func() { first = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}

// w2Script is the scripted W2 message: 4 tool calls, then a reply.
func w2Script() string {
	calls := make([]map[string]any, 4)
	for i := range calls {
		calls[i] = map[string]any{"name": "echo", "input": map[string]any{"n": i}}
	}
	b, _ := json.Marshal(map[string]any{"tool_calls": calls, "reply": "done"})
	return string(b)
}

// startEcho serves the tool echo of Restate's and Temporal's W2: it
// answers the request body.
func startEcho() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		}))
	}()
	return "http://" + ln.Addr().String(), nil
}

// callEcho posts one tool call to the echo.
func callEcho(ctx context.Context, hc *http.Client, url string, n int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(fmt.Sprintf(`{"n":%d}`, n)))
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
