package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/snapstore/snapstore/tests/procstat"
)

var (
	httpsRounds   = flag.Int("https-rounds", 21, "pairs of HTTP and HTTPS point-read measurements (httpsPointReads)")
	httpsRound    = flag.Duration("https-round", time.Second, "duration of each HTTP or HTTPS point-read measurement of a pair")
	httpsTogether = flag.Int("https-together", 5, "measurements of -https-round*2 with wrk on the HTTP and the HTTPS server at the same time, after the pairs")
)

// httpsFigure is the point reads over plain HTTP and over HTTPS measured
// in pairs: plain[i] and tls[i] ran one right after the other.
type httpsFigure struct {
	plain, tls []float64 // requests per second
	// plainCPU and tlsCPU are the server's CPU time per request in each
	// measurement, in microseconds: what a request costs the server,
	// which the load of other processes changes much less than the rate.
	plainCPU, tlsCPU []float64
	// together holds the HTTPS/HTTP ratios of the measurements that ran
	// both at the same time (-https-together), under one and the same
	// load of the machine.
	together []float64
}

// ratio is the median of the pairs' HTTPS/HTTP ratios. A pair's two
// measurements saw nearly the same load of a shared machine, so their
// ratio cancels the load, and the median drops the pairs a burst of
// other work hit in one half only.
func (f httpsFigure) ratio() float64 {
	r := make([]float64, len(f.plain))
	for i := range f.plain {
		r[i] = f.tls[i] / f.plain[i]
	}
	return medianOf(r)
}

func (f httpsFigure) String() string {
	return fmt.Sprintf("HTTPS point reads %.0f%% of HTTP (median of %d pairs' ratios; medians %.0f req/s over HTTPS, %.0f over HTTP; server CPU per request %.0f µs over HTTPS, %.0f over HTTP; both at once: %.0f%%, median of %d)",
		100*f.ratio(), len(f.plain), medianOf(f.tls), medianOf(f.plain), medianOf(f.tlsCPU), medianOf(f.plainCPU), 100*medianOf(f.together), len(f.together))
}

// medianOf is the median of v (the mean of the middle two for an even
// count); v is not changed.
func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// httpsPointReads measures the point reads of script over plain HTTP and
// over HTTPS. Two servers run at once, one on data and one on a copy of
// it (a Pebble directory has one process at a time) serving HTTPS with a
// certificate of snapstore cert made in pki. After one measurement of
// each that is not counted (it warms the new processes' caches), wrk
// measures -https-rounds pairs of -https-round each, HTTP then HTTPS in
// odd pairs and HTTPS then HTTP in even ones, so that a trend in the
// machine's load favours neither; then -https-together measurements of
// both at the same time, which load that comes and goes within a second
// cannot tip either way. wrk keeps its 16 connections open, so the ratio
// is the cost of TLS records on kept-alive connections, not of
// handshakes.
func httpsPointReads(e env, data, pki, script string) httpsFigure {
	cp := data + "-https"
	if b, err := exec.Command("cp", "-a", data, cp).CombinedOutput(); err != nil {
		log.Fatalf("bench: copying %s: %v: %s", data, err, b)
	}
	defer os.RemoveAll(cp)
	plain := startServer(e, data, *storage, "", "http-point-interleaved")
	defer plain.stop()
	tlsSrv := startServer(e, cp, *storage, makePKI(pki), "https-point")
	defer tlsSrv.stop()
	d := max(*httpsRound, time.Second)
	pointRound(plain, script, d)
	pointRound(tlsSrv, script, d)
	var f httpsFigure
	for i := range max(*httpsRounds, 1) {
		var p, pc, t, tc float64
		if i%2 == 0 {
			p, pc = pointRound(plain, script, d)
			t, tc = pointRound(tlsSrv, script, d)
		} else {
			t, tc = pointRound(tlsSrv, script, d)
			p, pc = pointRound(plain, script, d)
		}
		f.plain, f.tls = append(f.plain, p), append(f.tls, t)
		f.plainCPU, f.tlsCPU = append(f.plainCPU, pc), append(f.tlsCPU, tc)
		log.Printf("bench: pair %d: HTTP %.0f req/s (%.0f µs CPU each), HTTPS %.0f req/s (%.0f µs): %.0f%%", i+1, p, pc, t, tc, 100*t/p)
	}
	// Both at once: each server gets about half of the machine, and a
	// burst of other work slows both alike, so the ratio is that of what
	// a request costs over each (the client's side included).
	for i := range *httpsTogether {
		var wg sync.WaitGroup
		var p, t float64
		wg.Go(func() { p = wrkFor(plain.url, script, 2*d) })
		wg.Go(func() { t = wrkFor(tlsSrv.url, script, 2*d) })
		wg.Wait()
		f.together = append(f.together, t/p)
		log.Printf("bench: at once %d: HTTP %.0f req/s, HTTPS %.0f req/s: %.0f%%", i+1, p, t, 100*t/p)
	}
	return f
}

// pointRound runs wrk with script against s for d and returns the
// requests per second and the server's CPU time per request in
// microseconds.
func pointRound(s *server, script string, d time.Duration) (rps, cpuMicros float64) {
	before, err := procstat.CPUTime(s.cmd.Process.Pid)
	if err != nil {
		log.Fatalf("bench: %v", err)
	}
	rps = wrkFor(s.url, script, d)
	after, err := procstat.CPUTime(s.cmd.Process.Pid)
	if err != nil {
		log.Fatalf("bench: %v", err)
	}
	return rps, float64((after - before).Microseconds()) / (rps * d.Seconds())
}
