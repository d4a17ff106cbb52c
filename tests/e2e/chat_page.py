"""Driving the chat view of a real VS Code session: send a message, find an approval card, press its
buttons, wait for a reply. Shared by the e2e tests that hold a conversation (the page scripts run
through `Session.js`, with `h` the driver's helpers and `args` the keyword arguments)."""

from __future__ import annotations

from e2e_session import Session

SEND = """
const frame = await h.chatFrame({ timeout: 60000 });
await h.waitFor(async () => frame.locator('button#stop').isDisabled(), { timeout: 30000, what: 'an idle chat' });
const box = frame.locator('textarea#input');
await box.click();
await box.fill(args.message);
await box.press('Enter');
"""

WAIT_REPLY = """
const frame = await h.chatFrame();
await h.waitFor(async () => (await frame.locator('#transcript').innerText()).includes(args.reply),
                { timeout: 60000, what: 'the reply in the chat' });
await h.waitFor(async () => frame.locator('button#stop').isDisabled(), { timeout: 30000, what: 'the turn to end' });
return await frame.locator('#transcript').innerText();
"""

CARD = """
const frame = await h.chatFrame();
return await h.waitFor(async () => (await h.approvalCards(frame)).find(
    (c) => c.status === args.status && (!args.callId || c.callId === args.callId) && !args.not.includes(c.callId)) || null,
  { timeout: 60000, what: `an approval card that is ${args.status}` });
"""

PRESS = """
const frame = await h.chatFrame();
await h.pressCardButton(frame, args.callId, args.action);
"""


def chat(s: Session, message: str) -> None:
    """Type `message` into the idle chat and send it."""
    s.js(SEND, message=message)


def card(s: Session, status: str = "pending", call_id: str = "", *, other_than: str = "") -> dict:
    """The first approval card with this status (and call id, and not `other_than`), once it shows."""
    found = s.js(CARD, status=status, callId=call_id, **{"not": [other_than] if other_than else []})
    assert isinstance(found, dict), found
    return found


def press(s: Session, call_id: str, action: str) -> None:
    """Press a card's button (`approve`, `deny`, ...)."""
    s.js(PRESS, callId=call_id, action=action)


def reply(s: Session, text: str) -> str:
    """The transcript, once it holds `text` and the turn has ended."""
    transcript = s.js(WAIT_REPLY, reply=text)
    assert isinstance(transcript, str)
    return transcript
