// Client-side SSE frames. Each frame is complete (ends with a blank line) so it can be written the moment it exists.

export const dataFrame = (data: unknown): string => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

export const eventFrame = (event: string | undefined, data: string): string =>
  event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;

export const DONE_FRAME = 'data: [DONE]\n\n';
