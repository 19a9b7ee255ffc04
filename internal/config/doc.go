// Package config loads and checks a Sluice gateway configuration.
//
// Parsing is strict on purpose: an unknown key, a duration without a unit
// or a target naming a missing provider stops the gateway at startup with
// an error that names the file, line and field and says what to write,
// instead of surfacing later as odd routing or timeouts under load. Fields
// the file leaves out take the defaults in defaults.go.
package config
