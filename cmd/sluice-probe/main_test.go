package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestRun(t *testing.T) {
	var draining atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	if got := run([]string{srv.URL + "/readyz"}, io.Discard); got != 0 {
		t.Errorf("ready: exit %d, want 0", got)
	}
	draining.Store(true)
	if got := run([]string{srv.URL + "/readyz"}, io.Discard); got != 1 {
		t.Errorf("draining: exit %d, want 1", got)
	}
	if got := run([]string{"--timeout", "200ms", "http://127.0.0.1:1/readyz"}, io.Discard); got != 1 {
		t.Errorf("refused: exit %d, want 1", got)
	}
	if got := run(nil, io.Discard); got != 2 {
		t.Errorf("no URL: exit %d, want 2", got)
	}
}
