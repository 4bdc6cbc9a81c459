// Drives batchd's /v1/responses and /v1/messages with the official
// JavaScript SDKs (pinned in package.json) and prints what they got, as
// JSON, for daemon/npmclients_test.go to judge. BATCHD_URL (http://host:port),
// BATCHD_KEY and BATCHD_MODEL say where and what.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { generateText, streamText, generateObject, jsonSchema, tool as aiTool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, run, tool as agentTool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";

const base = process.env.BATCHD_URL, apiKey = process.env.BATCHD_KEY, model = process.env.BATCHD_MODEL;
const out = {};

const tool = {
  type: "function", name: "add", description: "add two integers", strict: false,
  parameters: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"] },
};

const openai = new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 });
const provider = createOpenAI({ baseURL: base + "/v1", apiKey });

if (process.env.BATCHD_CHECK === "agents") {
  // The OpenAI Agents SDK on /v1/responses: an agent with a function tool
  // (required on the first turn; once it has run, the tool is disabled,
  // as an agent that needs one lookup would) and an output type, so the
  // next turn carries the call's output and must answer in the schema.
  setTracingDisabled(true);
  setDefaultOpenAIClient(new OpenAI({ baseURL: base + "/v1", apiKey, maxRetries: 0 }));
  setOpenAIAPI("responses");
  const calls = [];
  const add = agentTool({ name: "add", description: "add two integers", strict: true,
    parameters: { ...tool.parameters, additionalProperties: false },
    execute: async ({ a, b }) => { calls.push([a, b]); return String(a + b); }, isEnabled: () => calls.length === 0 });
  const agent = new Agent({ name: "calculator", instructions: "Add the numbers with the add tool, then answer.", model, tools: [add],
    modelSettings: { toolChoice: "required", maxTokens: 256, temperature: 0 },
    outputType: { type: "json_schema", name: "answer", strict: true,
      schema: { type: "object", properties: { sum: { type: "integer" } }, required: ["sum"], additionalProperties: false } } });
  const result = await run(agent, "What is 2 plus 3?", { maxTurns: 4 });
  console.log(JSON.stringify({ agents: { calls, final: result.finalOutput, items: result.newItems.map((i) => i.type) } }));
  process.exit(0);
}

if (process.env.BATCHD_CHECK === "harmony") {
  // A harmony model (gpt-oss) through Chat Completions, as from Qwen: a
  // required call with the OpenAI SDK and with the AI SDK's chat provider.
  // The grammar lets the model reason first for as long as it likes (a
  // random model: on and on), so seeds are tried until a call comes.
  const tools = [{ type: "function", function: { name: "add", description: tool.description, parameters: tool.parameters } }];
  const res = { openai: [], ai: [] };
  for (let seed = 1; seed <= 12 && !res.openai.some((r) => r.finish === "tool_calls"); seed++) {
    const c = (await openai.chat.completions.create({ model, messages: [{ role: "user", content: "What is 2 plus 3?" }], tools,
      tool_choice: "required", max_tokens: 160, temperature: 1, seed })).choices[0];
    res.openai.push({ finish: c.finish_reason, name: c.message.tool_calls?.[0]?.function.name,
      arguments: c.message.tool_calls?.[0]?.function.arguments });
  }
  for (let seed = 1; seed <= 12 && !res.ai.some((r) => r.toolName); seed++) {
    const ai = await generateText({ model: provider.chat(model), prompt: "What is 2 plus 3?", maxOutputTokens: 160, temperature: 1,
      seed, maxRetries: 0, toolChoice: "required",
      tools: { add: aiTool({ description: "add two integers", inputSchema: jsonSchema(tool.parameters) }) } });
    res.ai.push({ finish: ai.finishReason, toolName: ai.toolCalls[0]?.toolName, input: ai.toolCalls[0]?.input });
  }
  // LangChain's ChatOpenAI, its tools bound with tool_choice required.
  const { ChatOpenAI } = await import("@langchain/openai");
  const lc = new ChatOpenAI({ model, apiKey, configuration: { baseURL: base + "/v1" }, temperature: 1, maxTokens: 160, maxRetries: 0 })
    .bindTools(tools, { tool_choice: "required" });
  res.langchain = [];
  for (let seed = 1; seed <= 12 && !res.langchain.some((r) => r.name); seed++) {
    const msg = await lc.invoke("What is 2 plus 3?", { seed });
    res.langchain.push({ finish: msg.response_metadata?.finish_reason, name: msg.tool_calls?.[0]?.name, args: msg.tool_calls?.[0]?.args });
  }
  console.log(JSON.stringify({ harmony: res }));
  process.exit(0);
}

const text = await openai.responses.create({ model, input: "Count to three.", max_output_tokens: 12, temperature: 0 });
out.responsesText = { status: text.status, text: text.output_text, outputTokens: text.usage.output_tokens };
const types = [];
const stream = openai.responses.stream({ model, input: "Count to three.", max_output_tokens: 12, temperature: 0 });
for await (const ev of stream) types.push(ev.type);
const final = await stream.finalResponse();
// The stream's final snapshot: its messages' text (output_text is set only
// on response.completed, and this answer ends incomplete).
const messageText = (r) => r.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
out.responsesStream = { types, text: messageText(final) };
const called = await openai.responses.create({ model, input: "What is 2 plus 3?", tools: [tool], tool_choice: "required",
  max_output_tokens: 200, temperature: 0 });
const call = called.output.find((o) => o.type === "function_call");
out.responsesCall = { name: call?.name, arguments: call?.arguments, callId: call?.call_id };
const next = await openai.responses.create({ model, previous_response_id: called.id, tools: [tool], max_output_tokens: 4,
  temperature: 0, input: [{ type: "function_call_output", call_id: call?.call_id, output: "5" }] });
out.responsesNext = { status: next.status, inputTokens: next.usage.input_tokens, firstInputTokens: called.usage.input_tokens };

const anthropic = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const msg = await anthropic.messages.create({ model, max_tokens: 12, temperature: 0,
  messages: [{ role: "user", content: "Count to three." }] });
out.messagesText = { stopReason: msg.stop_reason, text: msg.content.map((b) => b.text ?? "").join("") };
const ms = anthropic.messages.stream({ model, max_tokens: 12, temperature: 0, messages: [{ role: "user", content: "Count to three." }] });
const msFinal = await ms.finalMessage();
out.messagesStream = { stopReason: msFinal.stop_reason, text: msFinal.content.map((b) => b.text ?? "").join("") };
const aTool = { name: "add", description: "add two integers", input_schema: tool.parameters };
const used = await anthropic.messages.create({ model, max_tokens: 200, temperature: 0, tools: [aTool], tool_choice: { type: "any" },
  messages: [{ role: "user", content: "What is 2 plus 3?" }] });
const use = used.content.find((b) => b.type === "tool_use");
out.messagesToolUse = { stopReason: used.stop_reason, name: use?.name, input: use?.input };
const after = await anthropic.messages.create({ model, max_tokens: 4, temperature: 0, tools: [aTool], messages: [
  { role: "user", content: "What is 2 plus 3?" }, { role: "assistant", content: used.content },
  { role: "user", content: [{ type: "tool_result", tool_use_id: use?.id, content: "5" }] }] });
out.messagesNext = { inputTokens: after.usage.input_tokens, firstInputTokens: used.usage.input_tokens };

// The AI SDK's default OpenAI provider speaks /v1/responses.
const gen = await generateText({ model: provider(model), prompt: "Count to three.", maxOutputTokens: 12, temperature: 0, maxRetries: 0 });
const st = streamText({ model: provider(model), prompt: "Count to three.", maxOutputTokens: 12, temperature: 0, maxRetries: 0 });
let streamed = "";
for await (const part of st.textStream) streamed += part;
const withTool = await generateText({ model: provider(model), prompt: "What is 2 plus 3?", maxOutputTokens: 200, temperature: 0,
  maxRetries: 0, toolChoice: "required",
  tools: { add: aiTool({ description: "add two integers", inputSchema: jsonSchema(tool.parameters) }) } });
const obj = await generateObject({ model: provider(model), prompt: "A number.", maxOutputTokens: 200, temperature: 0, maxRetries: 0,
  schema: jsonSchema({ type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 99 } }, required: ["n"],
    additionalProperties: false }) });
out.aiSDK = { text: gen.text, finish: gen.finishReason, streamed, toolName: withTool.toolCalls[0]?.toolName,
  toolInput: withTool.toolCalls[0]?.input, object: obj.object };

console.log(JSON.stringify(out));
