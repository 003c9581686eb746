/** A text part of a multimodal message. */
export interface ChatTextPart {
  type: 'text';
  text: string;
}

/**
 * A media part (`audio`, `image`, `video`). Only `type` matters to the templates: Gemma 3n
 * renders `{type:'audio'}` as `<audio_soft_token>`, Gemma 4 as `<|audio|>`, at the part's
 * position. Extra fields (a file path, a sample array, …) are for the caller's processor;
 * see {@link toTemplateValue} for what the template sees of them.
 */
export interface ChatMediaPart {
  type: 'audio' | 'image' | 'video';
  [field: string]: unknown;
}

export type ChatContentPart = ChatTextPart | ChatMediaPart;

/**
 * One chat message, in the shape Hugging Face chat templates expect. `content` is a string
 * or a list of parts. Other fields (`tool_calls`, `tool_responses`, `name`, …) are passed
 * to the template unchanged.
 */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string | ChatContentPart[];
  [field: string]: unknown;
}
