// This file is not part of the service. With BENCH_PPROF set, test/bench
// builds cmd/carebridge with `go build -overlay` that adds it to package
// main, so the bench can take CPU and allocation profiles of the running
// server. It listens only when CAREBRIDGE_BENCH_PPROF_ADDR is set.

package main

import (
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
)

func init() {
	addr := os.Getenv("CAREBRIDGE_BENCH_PPROF_ADDR")
	if addr == "" {
		return
	}
	var (
		mu  sync.Mutex
		out *os.File
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cpu/start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.Create(r.FormValue("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out = f
	})
	mux.HandleFunc("POST /cpu/stop", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		pprof.StopCPUProfile()
		if out != nil {
			out.Close()
			out = nil
		}
	})
	mux.HandleFunc("POST /profile/{name}", func(w http.ResponseWriter, r *http.Request) {
		p := pprof.Lookup(r.PathValue("name"))
		if p == nil {
			http.NotFound(w, r)
			return
		}
		f, err := os.Create(r.FormValue("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		if err := p.WriteTo(f, 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	go http.ListenAndServe(addr, mux)
}
