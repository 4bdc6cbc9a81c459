// Package kvevents publishes the prefix cache's changes (kvcache.Event) over
// ZeroMQ as vLLM publishes its KV-cache events, so that a router outside the
// process (llm-d's KV-cache indexer behind the Gateway API Inference
// Extension's endpoint picker) can send each request to the replica that
// holds the longest run of its prompt's blocks.
//
// The wire form follows vLLM's vllm/distributed/kv_events.py as llm-d reads
// it (llm-d-kv-cache pkg/kvevents/engineadapter/vllm_adapter.go): a PUB
// socket; each message has three frames, the topic
// ("kv@<pod address>@<model>"), an 8-byte big-endian sequence number
// counted per topic, and a msgpack array [ts, [event...]] where an event is
// a tagged array: ["BlockStored", hashes, parent|nil, token_ids, block_size,
// lora_id, medium, lora_name], ["BlockRemoved", hashes, medium] or
// ["AllBlocksCleared"]. A hash is a uint64 (the first eight bytes of
// batchd's chained SHA-256, big-endian).
//
// Publishing never blocks the engine: a message is queued on the socket
// and dropped past its high-water mark (its sequence number is spent, so a
// subscriber sees the gap), as a ZeroMQ PUB socket drops for a slow
// subscriber.
//
// The events carry prompt token ids: bind the socket where only the router
// reaches it.
package kvevents
