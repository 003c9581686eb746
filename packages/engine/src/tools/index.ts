export type { ToolDefinition, ToolFunction, ToolCall, ToolCallDelta, ToolChoice, OpenAIMessage } from './types.js';
export { ToolCallStreamParser, parseToolCalls, newCallId, type CallSyntax, type ParsedCall, type ParserOutput } from './parse.js';
export { toolFormatFor, toolFormatById, gemma4ArgsToJson, jsonConventionPrompt, type ToolFormat, type ToolFormatId } from './formats.js';
export { prepareChatRequest, planChatRequest, CLIENT_ERROR_CODES, type ChatRequestFields, type ChatPlan, type ChatPlanContext, type PreparedChat } from './prepare.js';
