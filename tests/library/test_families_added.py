"""Model ids and chat-template markers of the families added from peers' parsers (issue 11).

A family without a real chat template in ``tests/data/chat_templates`` is detected here from a fragment
that renders its turn and tool-call syntax the way its peers' renderers and parsers read it; the test
checks that the family's marker rules pick it (or a family of the same format) over every other family.
"""

from __future__ import annotations

import pytest

import response_templates as rt
from response_templates import library

CASES = [
    # (family, a model id, a chat-template fragment)
    (
        "cohere-command-a-reasoning",
        "CohereLabs/command-a-plus-05-2026-bf16",
        "{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% if reasoning %}<|START_THINKING|>{% endif %}"
        "<|START_ACTION|>[{{ calls }}]<|END_ACTION|><|START_TEXT|>{{ text }}<|END_TEXT|><|END_OF_TURN_TOKEN|>",
    ),
    (
        "exaone-4",
        "LGAI-EXAONE/EXAONE-4.0-32B",
        "{{ '[|user|]\\n' + content + '[|endofturn|]\\n' }}{% for t in tools %}<tool>{{ t | tojson }}</tool>"
        '{% endfor %}<tool_call>{"name": ..., "arguments": ...}</tool_call>'
        "{% if add_generation_prompt %}{{ '[|assistant|]\\n' }}{% if enable_thinking %}<think>\\n{% endif %}{% endif %}",
    ),
    (
        "cogito-v2.1",
        "deepcogito/cogito-671b-v2.1",
        "{{ 'Enable deep thinking subroutine.' }}{{ '<｜User｜>' + content }}"
        "{{ '<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>' + name }}"
        "{{ '<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>' }}"
        "{% if add_generation_prompt %}<｜Assistant｜>{% if enable_thinking %}<think>\\n{% endif %}{% endif %}",
    ),
    (
        "dots",
        "rednote-hilab/dots.llm1.inst",
        "{{ '<|system|>' + system + '<|endofsystem|>' }}{{ '<|userprompt|>' + content + '<|endofuserprompt|><|response|>' }}"
        'Call tools inside <dots_function_call><invoke name="NAME"><parameter name="KEY">VALUE</parameter></invoke>'
        "</dots_function_call>{{ '<|endofresponse|>' }}",
    ),
    (
        "hy-v4",
        "tencent/HY-V4-A20B",
        "{{ '<｜hy_User｜>' + content }}{{ '<｜hy_Assistant:6124c78e｜>' }}<tool_calls:6124c78e><tool_call:6124c78e>{{ name }}"
        "<arg_key:6124c78e>{{ k }}</arg_key:6124c78e><arg_value:6124c78e>{{ v }}</arg_value:6124c78e>"
        "</tool_call:6124c78e></tool_calls:6124c78e><｜hy_eos:6124c78e｜>{% if reasoning_effort != 'no_think' %}"
        "<think:6124c78e>{% endif %}",
    ),
    (
        "intellect-3",
        "PrimeIntellect/INTELLECT-3-FP8",
        "{{ '<|im_start|>system\\n' + system }}<tools><function><name>{{ name }}</name></function></tools>"
        "If you choose to call a function ONLY reply in the following format with NO suffix:"
        "<tool_call><function=example_function_name><parameter=example_parameter_1>value_1</parameter></function>"
        "</tool_call>- You may provide optional reasoning for your function call in natural language BEFORE the "
        "function call, but NOT after<|im_end|>{{ '<|im_start|>assistant\\n<think>' }}",
    ),
    (
        "llama-nemotron",
        "nvidia/Llama-3_3-Nemotron-Super-49B-v1",
        "{{ '<|start_header_id|>system<|end_header_id|>\\n\\n' + system + '<|eot_id|>' }}"
        "<AVAILABLE_TOOLS>{{ tools | tojson }}</AVAILABLE_TOOLS><TOOLCALL>[{{ calls }}]</TOOLCALL>"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}",
    ),
    (
        "mimo-v2-flash",
        "XiaomiMiMo/MiMo-V2-Flash",
        "{{ '<|im_start|>user\\n' + content + '<|im_end|>' }}<tool_call>\\n<function={{ name }}>\\n"
        "<parameter={{ key }}>{{ value }}</parameter>\\n</function>\\n</tool_call>{{ '<|im_start|>assistant\\n' }}",
    ),
    (
        "iquest-coder",
        "IQuestLab/IQuest-Coder-V1-40B-Loop-Instruct",
        "{{ '<|im_start|>user\\n' + content + '<|im_end|>' }}<tool_call>\\n<function={{ name }}>\\n"
        "<parameter={{ key }}>\\n{{ value }}\\n</parameter>\\n</function>\\n</tool_call>"
        "{{ '<|im_start|>assistant\\n<think>\\n' }}",
    ),
    (
        "step-audio-2",
        "stepfun-ai/Step-Audio-2-mini",
        "{{ '<|BOT|>system\\n' + system + '<|EOT|>' }}{{ '<|BOT|>human\\n' + content + '<|EOT|>' }}"
        "<tool_call>function\\n{{ name }}\\n{{ arguments }}</tool_call>{{ '<|BOT|>assistant\\n' }}",
    ),
    (
        "hyperclovax-seed-think",
        "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B",
        "{{ '<|im_start|>user\\n' + content + '<|im_end|>\\n' }}<tool_call>{function-name}\\n<arg_key>{k1}</arg_key>\\n"
        "<arg_value>{v1}</arg_value>\\n</tool_call>{{ '<|im_start|>assistant\\n' }}"
        "{% if thinking %}<think>\\n{% else %}<think>\\n\\n</think>\\n\\n{% endif %}",
    ),
    (
        "kolibri-1",
        "Aleph-Alpha/Kolibri-1",
        "{{ '<|im_start|>system\\n# Reasoning effort\\n\\n' + effort }}<tools>{{ tools }}</tools><tool_call>\\n"
        '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n'
        "{{ '<|im_start|>assistant\\n' }}{% if not think %}<think>\\n\\n</think>\\n\\n{% endif %}",
    ),
    (
        "trinity",
        "arcee-ai/Trinity-Mini",
        "{{ '<|im_start|>system\\n' + system + '<|im_end|>\\n' }}<tool_call>\\n{{ call | tojson }}\\n</tool_call>"
        "<think>{{ reasoning }}</think>{{ '<|im_start|>assistant\\n' }}",
    ),
    (
        "llm-jp-4",
        "llm-jp/llm-jp-4.1-8b-thinking",
        "{%- set chat_format = 'llm-jp-harmony-v1' -%}{{ '<|start|>user<|message|>' + content + '<|end|>' }}"
        "{{ '<|start|>assistant<|channel|>analysis<|message|>' + thinking + '<|end|>' }}"
        "{{ '<|start|>assistant to=functions.' + name + '<|channel|>commentary <|constrain|> json<|message|>' }}"
        "{{ arguments + '<|call|>' }}{{ '<|start|>assistant<|channel|>final<|message|>' + answer + '<|return|>' }}"
        "{{ '<|start|>assistant' }}",
    ),
    (
        "glm-ocr",
        "zai-org/GLM-OCR",
        "[gMASK]<sop>{{ '<|user|>\\n' + content + '/nothink' }}<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key>"
        "<arg_value>{arg-value-1}</arg_value></tool_call><|observation|>{{ '<|assistant|>\\n' }}",
    ),
]


@pytest.mark.parametrize(("family", "model_id", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_model_id_selects_the_family(family: str, model_id: str, fragment: str) -> None:
    assert library.family_for_model(model_id).name == family
    assert rt.templates.for_model(model_id) is library.family(family).template()


#: Families without a marker rule of their own whose chat template is read as another family's: the
#: detected family reads the calls outside reasoning the same way (see the family's notes).
DETECTED_AS = {"trinity": "hermes"}


@pytest.mark.parametrize(("family", "model_id", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_markers_detect_the_family(family: str, model_id: str, fragment: str) -> None:
    expected = library.family(DETECTED_AS.get(family, family))
    found = library.detect_family(fragment)
    assert found.resolved().name == expected.resolved().name, found.name
    assert rt.templates.detect(fragment).fields is expected.template().fields  # same compiled template
