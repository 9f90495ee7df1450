package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/pgtest"
)

// errorCodes maps each failed source of a search answer to its code.
func errorCodes(a searchAnswer) map[string]string {
	out := map[string]string{}
	for _, e := range a.Metadata.Errors {
		out[e.Source] = e.Code
	}
	return out
}

// A reload of the EHR systems file (what SIGHUP does): the next search asks
// the new systems, and a system left as it was keeps its clients, here its
// open breaker.
func TestReloadEHR_NextSearchUsesTheNewSystemsAndKeepsUnchangedOnes(t *testing.T) {
	w := newWorld(t)
	a := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	b := newFakeEHR(t, "clinicb", fhirPatient("b-1", "Lopez", "Bea", "1981-03-02", "MRN-2"))
	first, _ := ehrFile(t, 2000, a)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchCacheTTL, c.SearchRateLimit = first, time.Minute, 1000 })
	tok := w.token("alice")

	// clinica fails: three searches of two attempts each open its breaker (5 failures).
	a.status.Store(503)
	for i := range 3 {
		s.search(tok, fmt.Sprintf(`{"query":"Lopez %d"}`, i))
	}
	if _, ans := s.search(tok, `{"query":"Lopez"}`); errorCodes(ans)["clinica"] != "circuit_open" {
		t.Fatalf("breaker of clinica not open: %+v", ans.Metadata)
	}
	a.status.Store(0)
	calls := a.calls.Load()

	second, _ := ehrFile(t, 2000, a, b)
	if err := s.app.ReloadEHR(second); err != nil {
		t.Fatal(err)
	}
	r, ans := s.search(tok, `{"query":"Lopez"}`)
	if r.status != 200 || ans.Status != "partial" || ans.Metadata.CacheHit || !slices.Equal(ans.Metadata.Sources, []string{"clinicb"}) ||
		errorCodes(ans)["clinica"] != "circuit_open" || a.calls.Load() != calls {
		t.Fatalf("after the reload: %d %s; want clinicb asked and clinica's breaker still open", r.status, r.body)
	}

	// A reload without clinicb: it is asked no more.
	third, _ := ehrFile(t, 2000, a)
	if err := s.app.ReloadEHR(third); err != nil {
		t.Fatal(err)
	}
	bCalls := b.calls.Load()
	if _, ans := s.search(tok, `{"query":"Bea"}`); slices.Contains(ans.Metadata.Sources, "clinicb") || b.calls.Load() != bCalls {
		t.Fatalf("clinicb asked after its removal: %+v", ans.Metadata)
	}
}

// A search in flight when a reload removes its system finishes on it.
func TestReloadEHR_RequestInFlightFinishesOnTheRemovedSystem(t *testing.T) {
	w := newWorld(t)
	slow := newFakeEHR(t, "slow", fhirPatient("s-1", "Okafor", "Ngozi", "1970-01-01", "MRN-9"))
	other := newFakeEHR(t, "other")
	first, _ := ehrFile(t, 20000, slow)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchRateLimit = first, 1000 })
	tok := w.token("alice")

	slow.delay.Store(int64(2 * time.Second))
	type result struct {
		r   response
		ans searchAnswer
	}
	done := make(chan result, 1)
	go func() {
		r, ans := s.search(tok, `{"query":"Okafor"}`)
		done <- result{r, ans}
	}()
	for slow.calls.Load() == 0 { // the search is in flight
		select {
		case got := <-done:
			t.Fatalf("search ended before it reached the EHR: %d %s", got.r.status, got.r.body)
		case <-time.After(5 * time.Millisecond):
		}
	}
	second, _ := ehrFile(t, 20000, other)
	if err := s.app.ReloadEHR(second); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.r.status != 200 || got.ans.Status != "success" || !slices.Equal(got.ans.Metadata.Sources, []string{"slow"}) || got.ans.Data.TotalCount != 1 {
		t.Fatalf("search in flight: %d %s", got.r.status, got.r.body)
	}
	if _, ans := s.search(tok, `{"query":"Okafor"}`); !slices.Equal(ans.Metadata.Sources, []string{"other"}) {
		t.Fatalf("next search: %+v", ans.Metadata)
	}
}

// The real signal path: the binary re-reads EHR_CONFIG on SIGHUP, and a
// file that does not validate is refused with an ERROR line while the
// systems in force keep answering.
func TestReloadEHR_SIGHUPRereadsTheFileAndRefusesAnInvalidOne(t *testing.T) {
	bin := carebridgeBin(t)
	tmp := t.TempDir()
	a := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	b := newFakeEHR(t, "clinicb", fhirPatient("b-1", "Lopez", "Bea", "1981-03-02", "MRN-2"))
	file := filepath.Join(tmp, "ehr.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yamlA, _ := ehrYAML(2000, a)
	yamlAB, _ := ehrYAML(2000, a, b)
	write(yamlA)
	env := append(crashEnv(tmp, pgtest.New(t)), "EHR_CONFIG="+file, "KEY_CLINICA=key-clinica", "KEY_CLINICB=key-clinicb", "SEARCH_CACHE_TTL=0s")
	tokCmd := exec.Command(bin, "dev-token", "--sub", "alice")
	tokCmd.Env = env
	raw, err := tokCmd.Output()
	if err != nil {
		t.Fatalf("dev-token: %v", err)
	}
	tok := strings.TrimSpace(string(raw))
	in := startCrashInstance(t, bin, env, tmp, "reload")

	sources := func() []string {
		t.Helper()
		req, _ := http.NewRequest("POST", in.base+"/api/v1/search", strings.NewReader(`{"query":"Lopez"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var ans searchAnswer
		if resp.StatusCode != 200 || json.Unmarshal(body, &ans) != nil {
			t.Fatalf("search: %d %s", resp.StatusCode, body)
		}
		return ans.Metadata.Sources
	}
	// logged waits for the n-th log line containing marker.
	logged := func(marker string, n int) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			raw, _ := os.ReadFile(in.log)
			var hits []string
			for _, l := range strings.Split(string(raw), "\n") {
				if strings.Contains(l, marker) {
					hits = append(hits, l)
				}
			}
			if len(hits) >= n {
				return hits[n-1]
			}
			if time.Now().After(deadline) {
				in.logTail(t)
				t.Fatalf("no log line %q after 30 s", marker)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if got := sources(); !slices.Equal(got, []string{"clinica"}) {
		t.Fatalf("sources before the reload: %v", got)
	}
	write(yamlAB)
	if err := in.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if line := logged("EHR systems file reloaded", 1); !strings.Contains(line, `"systems":["clinica","clinicb"]`) || strings.Contains(line, "key-clinic") {
		t.Fatalf("reload line %s", line)
	}
	if got := sources(); !slices.Equal(got, []string{"clinica", "clinicb"}) {
		t.Fatalf("sources after the reload: %v", got)
	}

	write(strings.Replace(yamlA, "    sites:", "    businesses: [not-a-business-7f3e9a]\n    sites:", 1))
	if err := in.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if line := logged("EHR systems file refused", 1); !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "not-a-business-7f3e9a") {
		t.Fatalf("refusal line %s", line)
	}
	if got := sources(); !slices.Equal(got, []string{"clinica", "clinicb"}) {
		t.Fatalf("sources after a refused file: %v", got)
	}
}
