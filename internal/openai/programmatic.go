package openai

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// Programmatic tool calling links tool calls to the program item that
// issued them (`caller: {type: "program", caller_id}`), runs `program` and
// `program_output` items, and limits which callers may use a tool
// (`allowed_callers`) and what a function returns (`output_schema`). Chat
// Completions and Anthropic Messages have no place for any of it. Dropping
// it would hand the model a conversation in which tool calls come from
// nowhere, or tools it may not call, so these are always rejected, whatever
// drop_unrepresentable_request_fields says. A direct caller is the ordinary
// case and is accepted (and left out of the converted payload).

const (
	chatAPI      = "Chat Completions"
	anthropicAPI = "Anthropic Messages"
)

// checkProgrammaticRequest returns the first construct of a Responses
// request that api can never carry.
func checkProgrammaticRequest(req members, api string) error {
	var err error
	elems(req["tools"], func(i int, tool gjson.Result) bool {
		err = checkProgrammaticTool(tool, fmt.Sprintf("tools[%d]", i), api)
		return err == nil
	})
	if err != nil {
		return err
	}
	if input := req["input"]; input.IsArray() {
		return checkProgrammaticItems(input, "input", api)
	}
	return nil
}

func checkProgrammaticItems(items gjson.Result, field, api string) error {
	var err error
	elems(items, func(i int, item gjson.Result) bool {
		err = checkProgrammaticItem(item, fmt.Sprintf("%s[%d]", field, i), api)
		return err == nil
	})
	return err
}

func checkProgrammaticTool(tool gjson.Result, where, api string) error {
	if !tool.IsObject() {
		return nil
	}
	if v := tool.Get("allowed_callers"); present(v) {
		return &UnrepresentableError{Field: where + ".allowed_callers", Reason: fmt.Sprintf(
			"the %s conversion cannot keep tool eligibility; only a null allowed_callers is accepted (an empty list is rejected too: it still restricts the tool)", api)}
	}
	if v := tool.Get("output_schema"); present(v) {
		return &UnrepresentableError{Field: where + ".output_schema", Reason: fmt.Sprintf(
			"the %s conversion cannot keep a function's output schema; remove it or use a Responses-native backend", api)}
	}
	var err error
	elems(tool.Get("tools"), func(i int, nested gjson.Result) bool { // namespace tools
		err = checkProgrammaticTool(nested, fmt.Sprintf("%s.tools[%d]", where, i), api)
		return err == nil
	})
	return err
}

func checkProgrammaticItem(item gjson.Result, where, api string) error {
	if !item.IsObject() {
		return nil
	}
	if t := item.Get("type"); isString(t, "program") || isString(t, "program_output") {
		return &UnrepresentableError{Field: where, Reason: fmt.Sprintf(
			"%s items cannot be represented in %s: the link between a program and the tool calls it issues would be lost", t.Str, api)}
	}
	if c := item.Get("caller"); present(c) && !(c.IsObject() && isString(c.Get("type"), "direct")) {
		return &UnrepresentableError{Field: where + ".caller", Reason: fmt.Sprintf(
			"a tool call issued by a program cannot be represented in %s; only direct callers are accepted", api)}
	}
	return nil
}
