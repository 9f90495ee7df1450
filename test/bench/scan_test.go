package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/clamd"
	"github.com/carebridge/carebridge/test/clamdtest"
)

// Paths of the scan bench.
const (
	sInstream     = "clamd INSTREAM from the bench (ceiling)"
	sUploadPlain  = "API upload, plain, not scanned"
	sScannedPlain = "API upload, plain, scanned"
	sUploadEnc    = "API upload, encrypted, not scanned"
	sScannedEnc   = "API upload, encrypted, scanned"
	sBigScanned   = "API upload 1 GiB, plain, scanned"
)

// BenchmarkScan measures uploads with and without malware scanning in the
// same run, against two instances of the service over the same database
// and S3 server, one of them with CLAMD_ADDRESS; and clamd's own scan rate
// of the same file sent by the bench over INSTREAM, the ceiling of a
// scanned upload. It needs CLAMD_BIN (scripts/install-clamd.sh) as well.
func BenchmarkScan(b *testing.B) {
	d := clamdtest.Start(b)
	e := setup(b)
	s := e.withScanner(d)
	r := &results{runs: map[string][]sample{}, bytes: map[string]int64{}, vgw: e.vgwPID != 0}
	clamdCPU := map[string][]float64{}
	timed := func(path string, n int64, w *world, f func()) {
		c0 := procCPU(d.PID())
		x := w.timed(f)
		clamdCPU[path] = append(clamdCPU[path], procCPU(d.PID())-c0)
		r.runs[path] = append(r.runs[path], x)
		r.bytes[path] = n
		progress("%d/%d %-42s %8.1f MB/s  %6.2fs", len(r.runs[path]), reps, path, mbps(n, x.wall), x.wall.Seconds())
	}
	start := time.Now()

	// Warm-up: connections, clamd's first scan.
	e.delete(e.upload(1<<20, false))
	s.delete(s.upload(1<<20, false))
	instream(b, d, 1<<20)

	var scanOnly []float64 // seconds from the end of the stream to clamd's verdict
	for range reps {
		timed(sInstream, fileSize, e, func() { scanOnly = append(scanOnly, instream(b, d, fileSize).Seconds()) })
		for _, enc := range []bool{false, true} {
			plain, scanned := sUploadPlain, sScannedPlain
			if enc {
				plain, scanned = sUploadEnc, sScannedEnc
			}
			var id int64
			timed(plain, fileSize, e, func() { id = e.upload(fileSize, enc) })
			e.delete(id)
			timed(scanned, fileSize, s, func() { id = s.upload(fileSize, enc) })
			s.delete(id)
		}
	}
	resetPeakRSS(s.server.Process.Pid)
	var id int64
	timed(sBigScanned, bigSize, s, func() { id = s.upload(bigSize, false) })
	peak := procStatusKiB(s.server.Process.Pid, "VmHWM")
	s.delete(id)
	r.wall = time.Since(start)

	printScan(os.Stdout, r, clamdCPU, scanOnly, peak, s.metric("carebridge_scan_duration_seconds_sum"), s.metric("carebridge_scan_duration_seconds_count"))
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(r.mbps(sScannedPlain)/r.mbps(sUploadPlain), "scanned/plain")
	b.ReportMetric(r.mbps(sInstream), "clamd-MB/s")
}

// withScanner starts a second service like e's, with CLAMD_ADDRESS set to
// d, and returns a world whose calls go to it.
func (e *world) withScanner(d *clamdtest.Daemon) *world {
	e.b.Helper()
	env := e.envOnFreePort("CLAMD_ADDRESS=" + d.Address())
	o := *e
	o.env = env
	o.server, o.base = e.serve(e.bin, env, "server-scan.log")
	return &o
}

// instream sends the text file of n bytes to clamd as the service does,
// with our client, and waits for the verdict; it returns that wait: clamd
// scans once the stream has ended.
func instream(b *testing.B, d *clamdtest.Daemon, n int64) time.Duration {
	b.Helper()
	network, address, err := clamd.ParseAddress(d.Address())
	if err != nil {
		b.Fatal(err)
	}
	c, err := clamd.New(clamd.Config{Network: network, Address: address})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	scan, err := c.Scan(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer scan.Close()
	if _, err := io.CopyBuffer(scan, newTextFile(n), make([]byte, copyBuf)); err != nil {
		b.Fatalf("INSTREAM: %v", err)
	}
	t0 := time.Now()
	if sig, err := scan.Verdict(); err != nil || sig != "" {
		b.Fatalf("INSTREAM verdict: %q, %v", sig, err)
	}
	return time.Since(t0)
}

func printScan(w io.Writer, r *results, clamdCPU map[string][]float64, scanOnly []float64, peakKiB int64, waitSum, waitCount float64) {
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fmt.Fprintf(w, "\nCarebridge scan bench: 256 MiB text file, median of %d runs, MB/s = 10^6 bytes/s;\n", reps)
	fmt.Fprintf(w, "two instances of the service (one with CLAMD_ADDRESS) over the same versitygw, and clamd\n")
	fmt.Fprintf(w, "(Debian 1.4.6, the tests' signatures) on loopback TCP.\n\n")
	fmt.Fprintf(w, "%-42s %9s  %-17s %8s %8s %8s %8s\n", "path", "MB/s", "runs", "wall s", "service", "clamd", "vs")
	for _, p := range []string{sInstream, sUploadPlain, sScannedPlain, sUploadEnc, sScannedEnc, sBigScanned} {
		m := r.median(p)
		var runs []string
		for _, x := range r.runs[p] {
			runs = append(runs, fmt.Sprintf("%.0f", mbps(r.bytes[p], x.wall)))
		}
		vs := ""
		switch p {
		case sScannedPlain:
			vs = fmt.Sprintf("%.2f", r.mbps(p)/r.mbps(sUploadPlain))
		case sScannedEnc:
			vs = fmt.Sprintf("%.2f", r.mbps(p)/r.mbps(sUploadEnc))
		}
		fmt.Fprintf(w, "%-42s %9.1f  %-17s %8.2f %8.2f %8.2f %8s\n", p, r.mbps(p), strings.Join(runs, " "), m.wall.Seconds(),
			m.cpu.server, median(clamdCPU[p]), vs)
	}
	fmt.Fprintf(w, "(service, clamd: CPU seconds of each process during the transfer; vs: scanned / not scanned)\n\n")
	// clamd scans a stream once it has ended (INSTREAM spools it to a
	// file first): a scanned upload cannot end before the upload's own
	// time plus clamd's scan of the whole file. Its ceiling is that sum;
	// the service overlaps the scan with the store's finishing of the
	// object only.
	scan := median(scanOnly)
	ceil := mbps(fileSize, r.median(sUploadPlain).wall+time.Duration(scan*float64(time.Second)))
	fmt.Fprintf(w, "clamd's scan alone (end of stream to verdict, bench INSTREAM): %.3f s = %.1f MB/s on one core\n", scan, float64(fileSize)/scan/1e6)
	fmt.Fprintf(w, "ceiling of a scanned plain upload: not scanned %.2f s + clamd's scan %.2f s = %.1f MB/s; the service reaches %.2f of it\n",
		r.median(sUploadPlain).wall.Seconds(), scan, ceil, r.mbps(sScannedPlain)/ceil)
	if waitCount > 0 {
		fmt.Fprintf(w, "verdict wait (last byte to clamd's answer), mean of %.0f scans: %.3f s\n", waitCount, waitSum/waitCount)
	}
	fmt.Fprintf(w, "server peak RSS (VmHWM) during the 1 GiB scanned upload: %.1f MiB (target <%d)\n", kib2mib(peakKiB), maxRSSMiB)
	fmt.Fprintf(w, "bench wall time %s\n", r.wall.Round(time.Second))
}
