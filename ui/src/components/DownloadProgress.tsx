import { useTranslation } from "react-i18next";
import type { DownloadEvent } from "../api";

/** A model download under way: bytes of the current package, then its verification. */
export type DownloadProgress = { name: string; done: number; total: number; verifying: boolean };

export function startProgress(name: string): DownloadProgress {
  return { name, done: 0, total: 0, verifying: false };
}

/** The progress after one event of the model library's download. */
export function advance(progress: DownloadProgress | null, name: string, e: DownloadEvent): DownloadProgress | null {
  if (e.type === "download") return { name, done: e.done ?? 0, total: e.total ?? 0, verifying: false };
  if (e.type === "extract") return progress ? { ...progress, verifying: true } : progress;
  return progress;
}

/** "Downloading… 45%" / "Verifying…" for a download under way. */
export function DownloadStatus({ progress, testid }: { progress: DownloadProgress; testid?: string }) {
  const { t } = useTranslation();
  return (
    <span className="muted small" role="status" data-testid={testid}>
      {progress.verifying
        ? t("models.verifying")
        : progress.total > 0
          ? t("models.downloading", { percent: Math.floor((progress.done / progress.total) * 100) })
          : t("models.starting")}
    </span>
  );
}
