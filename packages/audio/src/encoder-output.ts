/** What both audio towers return. */
export interface EncoderOutput {
  /** [frames, dim]: the tower output (after output_proj for Gemma 4). */
  hidden: Float32Array;
  frames: number;
  dim: number;
  /** [frames], 1 = valid frame. */
  mask: Uint8Array;
  /** The subsampler output after input_proj_linear, [sscpFrames, hidden]. */
  sscp: Float32Array;
  sscpFrames: number;
}
