// Package scrape reads a self-hosted replica's Prometheus metrics page
// (vLLM's or SGLang's) into the load a replica pool decides with
// (pool.Load). The parsing, and the Prometheus libraries it needs, live
// here, at the gateway's edge, so the pure pool never links them; the
// gateway fetches each page and hands ParseMetrics' result to the engine
// (lifecycle.Engine.Observe), as the simulator hands it modelled loads.
//
// FuzzParseMetrics, with its seed corpus in testdata/fuzz, holds that a
// page from a process the gateway does not control never yields a
// negative, infinite or out-of-range load.
package scrape
