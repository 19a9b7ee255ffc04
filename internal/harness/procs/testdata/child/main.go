// Command child is the process the procs tests start: it listens (after
// a delay), says so, stops on SIGTERM unless told to be stubborn, and
// can fail at once.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to serve GET /health on")
	delay := flag.Duration("delay", 0, "wait this long before listening")
	fail := flag.String("fail", "", "print this and exit 3 at once")
	stubborn := flag.Bool("stubborn", false, "ignore SIGTERM")
	flag.Parse()
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(3)
	}
	if *stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	sigs := make(chan os.Signal, 1)
	if !*stubborn {
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	}
	fmt.Println("starting")
	time.Sleep(*delay)
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	fmt.Println("listening on", l.Addr())
	s := <-sigs
	fmt.Println("stopping on", s)
}
