package chat

import (
	"maps"
	"slices"
)

// builtins are templates for models whose file carries none, chosen by
// name with the chat_template setting. They follow each family's
// published prompt format.
var builtins = map[string]string{
	"chatml": `{%- for message in messages %}{{ '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}`,

	"llama3": `{{- bos_token }}{%- for message in messages %}{{ '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}`,

	// Gemma has no system turn: the system text opens the first user turn.
	"gemma": `{{- bos_token }}{%- set ns = namespace(system='') %}{%- for message in messages %}
{%- if message.role == 'system' %}{%- set ns.system = message.content | trim + '\n\n' %}
{%- else %}{%- set role = 'model' if message.role == 'assistant' else message.role %}{{ '<start_of_turn>' + role + '\n' + ns.system + message.content | trim + '<end_of_turn>\n' }}{%- set ns.system = '' %}
{%- endif %}{%- endfor %}
{%- if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{%- endif %}`,

	"phi3": `{%- for message in messages %}{{ '<|' + message.role + '|>\n' + message.content + '<|end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{%- else %}{{ eos_token }}{%- endif %}`,

	// Mistral's [INST] format: a system message is prepended to the next user turn.
	"mistral": `{{- bos_token }}{%- set ns = namespace(system='') %}{%- for message in messages %}
{%- if message.role == 'system' %}{%- set ns.system = message.content + '\n\n' %}
{%- elif message.role == 'user' %}{{ '[INST] ' + ns.system + message.content + ' [/INST]' }}{%- set ns.system = '' %}
{%- else %}{{ message.content + eos_token }}
{%- endif %}{%- endfor %}`,
}

// BuiltinNames lists the templates Builtin knows, sorted.
func BuiltinNames() []string { return slices.Sorted(maps.Keys(builtins)) }

// Builtin compiles a built-in template by name; ok is false for an unknown name.
func Builtin(name string) (t *Template, ok bool, err error) {
	src, ok := builtins[name]
	if !ok {
		return nil, false, nil
	}
	t, err = Compile(name, src)
	return t, true, err
}
