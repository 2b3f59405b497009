"""The chat templates of the stand-in's tokenizer directories: ChatML with tools, a thinking
model's, and a Harmony one for the gpt-oss-like model."""

from __future__ import annotations

# ChatML, with tools the way Qwen2.5's template offers them: a system block listing each tool
# as JSON between <tools> tags and asking for calls between <tool_call> tags; assistant turns
# carry their calls in the same tags, tool results come back as <tool_response> user turns.
CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions. Their signatures are within "
    "<tools></tools>:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a JSON object with the function name "
    'and arguments within <tool_call></tool_call> tags:\\n<tool_call>\\n{"name": <name>, '
    '"arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['content'] is string %}{%- set text = message['content'] %}"
    "{%- elif message['content'] %}"
    "{%- set text = message['content'] | map(attribute='text') | join('') %}"
    "{%- else %}{%- set text = '' %}{%- endif %}"
    "{%- if message['role'] == 'system' and tools and loop.first %}"
    "{%- elif message['role'] == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + text + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- elif message['role'] == 'assistant' and message['tool_calls'] %}"
    "{{- '<|im_start|>assistant\\n' + text | trim }}"
    "{%- for call in message['tool_calls'] %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + call['function']['name'] + '\", \"arguments\": ' }}"
    "{{- call['function']['arguments'] | tojson }}{{- '}\\n</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + text | trim + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# The same, for a thinking model as Qwen3 writes it: earlier turns' reasoning is left out, and
# `enable_thinking=false` closes an empty think block in the prompt, so the answer starts at once.
THINKING_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}",
)

# Like gpt-oss's template in what the gateway reads from it (Harmony's turns, channels and call
# markup, a generation prompt of `<|start|>assistant`), smaller in the rest: the tools are listed
# as JSON lines between <tools> tags (which the stand-in reads back) instead of a TypeScript
# namespace, and a tool's result is a message from `functions.NAME` to the assistant.
HARMONY_CHAT_TEMPLATE = (
    "{{- '<|start|>system<|message|>You are a stand-in for gpt-oss.\\nReasoning: medium\\n\\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.' }}"
    "{%- if tools %}{{- '\\nCalls to these tools must go to the commentary channel: "
    "\\'functions\\'.' }}{%- endif %}{{- '<|end|>' }}"
    "{%- set ns = namespace(tool='') %}"
    "{%- for message in messages %}"
    "{%- if message['content'] is string %}{%- set text = message['content'] %}"
    "{%- elif message['content'] %}"
    "{%- set text = message['content'] | map(attribute='text') | join('') %}"
    "{%- else %}{%- set text = '' %}{%- endif %}"
    "{%- if message['role'] in ('system', 'developer') and loop.first %}"
    "{{- '<|start|>developer<|message|># Instructions\\n\\n' + text }}"
    "{%- if tools %}{{- '\\n\\n# Tools\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>' }}{%- endif %}{{- '<|end|>' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{{- '<|start|>functions.' + ns.tool + ' to=assistant<|channel|>commentary<|message|>' }}"
    "{{- text + '<|end|>' }}"
    "{%- elif message['role'] == 'assistant' and message['tool_calls'] %}"
    "{%- for call in message['tool_calls'] %}"
    "{{- '<|start|>assistant to=functions.' + call['function']['name'] }}"
    "{{- '<|channel|>commentary json<|message|>' }}"
    "{{- call['function']['arguments'] | tojson }}{{- '<|call|>' }}"
    "{%- set ns.tool = call['function']['name'] %}"
    "{%- endfor %}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{- '<|start|>assistant<|channel|>final<|message|>' + text + '<|end|>' }}"
    "{%- else %}"
    "{%- if loop.first and tools %}"
    "{{- '<|start|>developer<|message|># Tools\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools><|end|>' }}{%- endif %}"
    "{{- '<|start|>' + message['role'] + '<|message|>' + text + '<|end|>' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}"
)
