// Small stroke icons (16px, currentColor). Decorative: always aria-hidden.
import type { ReactNode } from "react";

function Icon({ children, size = 16 }: { children: ReactNode; size?: number }) {
  return (
    <svg
      width={size}
      height={size}
      viewBox="0 0 16 16"
      fill="none"
      stroke="currentColor"
      strokeWidth="1.4"
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      {children}
    </svg>
  );
}

export const ChatIcon = () => (
  <Icon>
    <path d="M2.5 3.5h11v7h-6l-3 2.5v-2.5h-2z" />
  </Icon>
);
export const FolderIcon = () => (
  <Icon>
    <path d="M1.5 4.5v8h13v-6.5h-6.5l-1.5-1.5z" />
  </Icon>
);
export const SettingsIcon = () => (
  <Icon>
    <circle cx="8" cy="8" r="2" />
    <path d="M8 1.5v2M8 12.5v2M1.5 8h2M12.5 8h2M3.4 3.4l1.4 1.4M11.2 11.2l1.4 1.4M3.4 12.6l1.4-1.4M11.2 4.8l1.4-1.4" />
  </Icon>
);
export const PlusIcon = () => (
  <Icon>
    <path d="M8 3v10M3 8h10" />
  </Icon>
);
export const TrashIcon = () => (
  <Icon size={14}>
    <path d="M2.5 4.5h11M6 4.5v-2h4v2M4 4.5l.7 9h6.6l.7-9" />
  </Icon>
);
export const CopyIcon = () => (
  <Icon size={14}>
    <rect x="5" y="5" width="8.5" height="8.5" rx="1.5" />
    <path d="M11 5v-2.5h-8.5v8.5h2.5" />
  </Icon>
);
export const ThumbUpIcon = () => (
  <Icon size={14}>
    <path d="M5 7l3-5c1 0 1.5.7 1.5 1.6l-.5 2.4h3.4c.8 0 1.3.7 1.1 1.4l-1.2 5c-.2.6-.7 1.1-1.4 1.1h-5.9zM2 7h3v7.5h-3z" />
  </Icon>
);
export const ThumbDownIcon = () => (
  <Icon size={14}>
    <path d="M11 9l-3 5c-1 0-1.5-.7-1.5-1.6l.5-2.4h-3.4c-.8 0-1.3-.7-1.1-1.4l1.2-5c.2-.6.7-1.1 1.4-1.1h5.9zM14 9h-3v-7.5h3z" />
  </Icon>
);
export const SendIcon = () => (
  <Icon>
    <path d="M8 13V3M3.5 7.5L8 3l4.5 4.5" />
  </Icon>
);
export const StopIcon = () => (
  <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
    <rect x="1" y="1" width="10" height="10" rx="2" fill="currentColor" />
  </svg>
);
export const ExternalIcon = () => (
  <Icon size={14}>
    <path d="M9 2.5h4.5V7M13.5 2.5L7.5 8.5M11.5 9.5v4h-9v-9h4" />
  </Icon>
);
export const DocIcon = () => (
  <Icon size={14}>
    <path d="M3.5 1.5h6l3 3v10h-9zM9.5 1.5v3h3M5.5 8h5M5.5 10.5h5" />
  </Icon>
);
export const RouteIcon = () => (
  <Icon size={14}>
    <circle cx="3.5" cy="12.5" r="1.5" />
    <circle cx="12.5" cy="3.5" r="1.5" />
    <path d="M5 12.5h4.5a2.5 2.5 0 000-5h-3a2.5 2.5 0 010-5H11" />
  </Icon>
);
export const UserIcon = () => (
  <Icon>
    <circle cx="8" cy="5.5" r="2.5" />
    <path d="M3 14c.5-2.8 2.5-4.2 5-4.2s4.5 1.4 5 4.2" />
  </Icon>
);
export const BackIcon = () => (
  <Icon size={14}>
    <path d="M10 3L5 8l5 5" />
  </Icon>
);
export const CheckIcon = () => (
  <Icon size={14}>
    <path d="M3 8.5l3 3 7-7" />
  </Icon>
);
export const UploadIcon = () => (
  <Icon size={40}>
    <path d="M8 10.5V2.5M5 5.5l3-3 3 3M2.5 10v3.5h11V10" />
  </Icon>
);

/** The app's mark: a rounded square with a stylised K. */
export const BrandMark = ({ size = 24 }: { size?: number }) => (
  <svg width={size} height={size} viewBox="0 0 24 24" aria-hidden="true" focusable="false" className="brand-mark">
    <defs>
      <linearGradient id="kh-grad" x1="0" y1="0" x2="1" y2="1">
        <stop offset="0" stopColor="#3b82f6" />
        <stop offset="1" stopColor="#6366f1" />
      </linearGradient>
    </defs>
    <rect width="24" height="24" rx="7" fill="url(#kh-grad)" />
    <path d="M8.5 6.5v11M8.5 12.5l6-6M11 10.5l5 7" stroke="#fff" strokeWidth="2.2" strokeLinecap="round" strokeLinejoin="round" fill="none" />
  </svg>
);
