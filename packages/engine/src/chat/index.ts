export type { ChatMessage, ChatContentPart, ChatTextPart, ChatMediaPart } from './types.js';
export { resolveChatTemplate, type ChatTemplateSource, type ResolveChatTemplateOptions } from './resolve.js';
export { ChatTemplate, loadChatTemplate, toTemplateValue, type RenderChatOptions } from './template.js';
export { buildPrompt, expandPlaceholders, type BuildPromptOptions, type BuiltPrompt } from './prompt.js';
