// Chat messages in the shapes traces carry them: OpenAI-style {role, content}, LangChain's serialized
// messages ({lc, id: [..., "HumanMessage"], kwargs}) and their dict form ({type: "human", content}),
// under `messages` (often nested one list per prompt, as LLM runs record them) or generations.
export type ChatMessage = { role: string; content: string; toolCalls?: unknown[] };

const ROLE_OF_CLASS: Record<string, string> = {
  HumanMessage: 'user',
  HumanMessageChunk: 'user',
  AIMessage: 'assistant',
  AIMessageChunk: 'assistant',
  SystemMessage: 'system',
  ToolMessage: 'tool',
  FunctionMessage: 'tool',
};
const ROLE_OF_TYPE: Record<string, string> = { human: 'user', ai: 'assistant', system: 'system', tool: 'tool', function: 'tool' };

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === 'string' ? part : typeof (part as { text?: unknown })?.text === 'string' ? (part as { text: string }).text : JSON.stringify(part))).join('\n');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

function toMessage(value: unknown): ChatMessage | null {
  if (!value || typeof value !== 'object') return null;
  const item = value as Record<string, unknown>;
  if (Array.isArray(item.id) && item.kwargs && typeof item.kwargs === 'object') {
    const className = String(item.id[item.id.length - 1]);
    const kwargs = item.kwargs as Record<string, unknown>;
    const role = ROLE_OF_CLASS[className];
    return role ? { role, content: text(kwargs.content), toolCalls: kwargs.tool_calls as unknown[] | undefined } : null;
  }
  if (typeof item.role === 'string' && 'content' in item) return { role: item.role, content: text(item.content), toolCalls: item.tool_calls as unknown[] | undefined };
  if (typeof item.type === 'string' && ROLE_OF_TYPE[item.type] && 'content' in item) {
    return { role: ROLE_OF_TYPE[item.type]!, content: text(item.content), toolCalls: item.tool_calls as unknown[] | undefined };
  }
  if (item.message) return toMessage(item.message);
  return null;
}

function asMessages(value: unknown): ChatMessage[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const flat = value.length === 1 && Array.isArray(value[0]) ? value[0] : value;
  const messages = (flat as unknown[]).map(toMessage);
  return messages.every((message): message is ChatMessage => message !== null) ? messages : null;
}

/** The conversation a run's inputs or outputs hold, or null when they hold none. */
export function findConversation(value: unknown): ChatMessage[] | null {
  if (!value || typeof value !== 'object') return null;
  const record = value as Record<string, unknown>;
  const generations = Array.isArray(record.generations) ? (record.generations as unknown[]).flat() : null;
  return (
    asMessages(record.messages) ??
    (generations ? asMessages(generations) : null) ??
    (record.output ? asMessages([record.output]) : null) ??
    (Array.isArray(record.choices) ? asMessages(record.choices) : null) ??
    null
  );
}

export function Conversation({ messages, label }: { messages: ChatMessage[]; label: string }) {
  return (
    <ol class="conversation" aria-label={label}>
      {messages.map((message) => (
        <li class={`message message-${message.role}`}>
          <span class="role">{message.role}</span>
          <div class="content">
            {message.content}
            {message.toolCalls?.length ? <pre class="json">{JSON.stringify(message.toolCalls, null, 2)}</pre> : null}
          </div>
        </li>
      ))}
    </ol>
  );
}
