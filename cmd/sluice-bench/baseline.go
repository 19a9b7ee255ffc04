package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// baselineProxy is `bench baseline-proxy`: the floor Sluice is measured
// against, a bare httputil.ReverseProxy with a tuned Transport and nothing
// else (no admission, no metrics, no logging, no body inspection). It runs
// as its own process so its CPU and memory can be read from /proc.
func baselineProxy(args []string) int {
	fs := flag.NewFlagSet("baseline-proxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "`address` to serve on")
	upstream := fs.String("upstream", "", "upstream root `URL`, e.g. http://127.0.0.1:8000")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	target, err := url.Parse(*upstream)
	if err != nil || target.Host == "" {
		fmt.Fprintf(os.Stderr, "baseline-proxy: --upstream must be an absolute URL, got %q\n", *upstream)
		return 2
	}

	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        20000,
		MaxIdleConnsPerHost: 20000,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: transport,
		// Flush every write: streams reach the client event by event.
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "baseline-proxy: %v\n", err)
		return 1
	}
	fmt.Printf("baseline-proxy: listening on %s, upstream %s\n", ln.Addr(), target)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return 0
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "baseline-proxy: %v\n", err)
		return 1
	}
}
