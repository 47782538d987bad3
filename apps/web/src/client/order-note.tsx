"use client";
/**
 * An order's delivery note, editable after the order: the edit is based on the version the page showed when it
 * began, so an edit begun before another tab saved its own is refused (409) instead of overwriting it, and the page
 * says to reload. Each order's edit is its own action, with its own key.
 */
import { useIdempotentMutation } from "@idemkit/react";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "./trpc";

export interface OrderNoteProps {
  orderId: number;
  note: string;
  version: number;
}

export function OrderNote({ orderId, note, version }: OrderNoteProps) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refreshOrders = () => queryClient.invalidateQueries({ queryKey: trpc.checkout.orders.queryKey() });
  /** The edit in progress: the text, and the version it is based on (the one shown when it began). */
  const [draft, setDraft] = useState<{ note: string; version: number }>();
  const edit = useIdempotentMutation(trpc.checkout.editNote, {
    storageKey: `idemkit:checkout.editNote:${orderId}`,
    onSuccess: async () => {
      setDraft(undefined);
      await refreshOrders();
    },
  });
  const stale = edit.error?.data?.httpStatus === 409;

  if (!draft) {
    return (
      <p className="note">
        <span>Note: {note || "none"}</span>{" "}
        <button
          type="button"
          onClick={() => {
            edit.reset();
            setDraft({ note, version });
          }}
        >
          Edit note
        </button>
      </p>
    );
  }
  return (
    <form
      className="note"
      onSubmit={(event) => {
        event.preventDefault();
        edit.mutate({ orderId, version: draft.version, note: draft.note });
      }}
    >
      <label>
        Delivery note{" "}
        <input
          value={draft.note}
          maxLength={200}
          onChange={(event) => setDraft({ ...draft, note: event.target.value })}
        />
      </label>{" "}
      <button type="submit" disabled={edit.isPending}>
        Save note
      </button>{" "}
      <button type="button" onClick={() => setDraft(undefined)}>
        Cancel
      </button>
      {edit.isError && (
        <span role="alert">
          {edit.error.message}{" "}
          {stale && (
            <button
              type="button"
              onClick={async () => {
                edit.reset();
                setDraft(undefined);
                await refreshOrders();
              }}
            >
              Reload
            </button>
          )}
        </span>
      )}
    </form>
  );
}
