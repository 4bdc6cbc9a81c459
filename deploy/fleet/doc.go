// Package fleet replays a trace against N batchd processes on loopback
// behind a small endpoint picker, to size a fleet (docs/FLEET.md): round
// robin, or scoring as llm-d's default profile does (queue 2, KV usage 2,
// prefix 3; the highest score wins, ties at random), with the queue and KV
// read from each replica's /metrics every 50 ms as the endpoint picker
// scrapes them and the prefixes from each replica's KV events, the prompt's
// ids from its render endpoint. The picker reads both with the fleet's own
// code: llm-d's vLLM adapter decodes the events and the Gateway API
// Inference Extension's scraper parses the metrics (from the module proxy),
// so the simulation fails where llm-d would; its tests check those wire
// forms directly too. It is a test tool, not a router: batchd ships none.
package fleet
