/** Sampling settings sent with each request of a conversation (OpenAI field names; null = server default). */
export interface Sampling {
  temperature: number | null;
  top_p: number | null;
  top_k: number | null;
  min_p: number | null;
  max_tokens: number | null;
  /** null = a fresh random seed on the server for every answer. */
  seed: number | null;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface Message {
  role: 'user' | 'assistant';
  content: string;
  /** Images the user attached to this turn, as data: URLs (sent as image_url parts). */
  images?: string[];
  /** Token counts the server reported for this answer (stream_options.include_usage). */
  usage?: Usage;
  /** Decode speed of this answer: completion tokens over the time between first and last token. */
  tokensPerSecond?: number;
  /** Why the server ended the answer ("stop", "length" = max tokens reached, ...). */
  finishReason?: string;
  /** The answer was cut short by the Stop button (content is what had arrived). */
  stopped?: boolean;
  /** The request failed; such turns are shown but never sent back to the model. */
  error?: string;
}

export interface Conversation {
  id: string;
  title: string;
  created: number;
  updated: number;
  systemPrompt: string;
  settings: Sampling;
  messages: Message[];
}

export const DEFAULT_SAMPLING: Sampling = {
  temperature: 0.7,
  top_p: 0.95,
  top_k: null,
  min_p: null,
  max_tokens: 1024,
  seed: null,
};
