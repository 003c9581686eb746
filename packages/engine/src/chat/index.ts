export type { ChatMessage, ChatContentPart, ChatTextPart, ChatMediaPart } from './types.js';
export { resolveChatTemplate, type ChatTemplateSource, type ResolveChatTemplateOptions } from './resolve.js';
export { ChatTemplate, loadChatTemplate, toTemplateValue, type RenderChatOptions } from './template.js';
export { buildPrompt, checkPromptFits, expandPlaceholders, type BuildPromptOptions, type BuiltPrompt } from './prompt.js';
export { DEFAULT_TEMPLATE_LIMITS, type TemplateLimits } from './limits.js';
