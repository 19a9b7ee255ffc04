package config

// State is where a gateway without a store keeps what must outlive the
// process: money spent against limits, keys made at run time, usage
// records. With store: set, all of it lives in the store instead, shared
// by the fleet, and Dir keeps only this replica's own usage records
// (Dir/usage), to write back if the store loses them.
type State struct {
	// Dir is a directory this gateway alone writes (default: none, and
	// then nothing outlives the process). Each kind of state has its own
	// file in it.
	Dir string `yaml:"dir"`
}

// Durable reports whether state outlives the process: in the store, or
// in state.dir.
func (c *Config) Durable() bool { return c.Store != "" || c.State.Dir != "" }
